package app

import (
	"errors"
	"fmt"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/jetstream"
)

// busConn adapts an in-process broker connection to the JetStream engine's
// Bus: the engine declares what it needs and never imports core/server.
type busConn struct{ conn *server.Conn }

var (
	_ jetstream.Bus             = busConn{}
	_ jetstream.InterestWatcher = busConn{}
)

// Subscribe implements jetstream.Bus.
func (b busConn) Subscribe(subject, queue string, h func(subject, reply, hdr, data []byte)) (func(), error) {
	sub, err := b.conn.Subscribe(subject, queue, func(m server.Msg) { h(m.Subject, m.Reply, m.Header, m.Data) })
	if err != nil {
		return nil, err
	}
	return sub.Unsubscribe, nil
}

// Publish implements jetstream.Bus.
func (b busConn) Publish(subject, reply string, hdr, data []byte) int {
	return b.conn.Publish(subject, reply, hdr, data)
}

// PublishAs implements jetstream.Bus.
func (b busConn) PublishAs(route, shown, reply string, hdr, data []byte) int {
	return b.conn.PublishAs(route, shown, reply, hdr, data)
}

// HasInterest implements jetstream.Bus.
func (b busConn) HasInterest(subject string) bool { return b.conn.HasInterest(subject) }

// HasExactInterest implements the engine's optional exact-interest check
// (snapshots wait for the receiver's own subscription).
func (b busConn) HasExactInterest(subject string) bool { return b.conn.HasExactInterest(subject) }

// HasQueueInterest implements jetstream.QueueInterester: a push consumer
// with a deliver group counts only that group's members as interest.
func (b busConn) HasQueueInterest(subject, queue string) bool {
	return b.conn.HasQueueInterest(subject, queue)
}

// WatchInterest implements jetstream.InterestWatcher: push consumers
// wake on subscription changes instead of polling for interest.
func (b busConn) WatchInterest(fn func(subject, queue string)) func() {
	return b.conn.WatchInterest(func(ev server.InterestEvent) { fn(ev.Subject, ev.Queue) })
}

// keyFailure returns the first restore failure caused by the encryption
// key (a wrong key, or an encrypted store and no key), naming its stream
// and consumer, or nil.
func keyFailure(fails []jetstream.RestoreFailure) error {
	for _, f := range fails {
		if errors.Is(f.Err, filestore.ErrWrongKey) || errors.Is(f.Err, filestore.ErrNoKey) {
			if f.Consumer != "" {
				return fmt.Errorf("stream %s consumer %s: %w", f.Stream, f.Consumer, f.Err)
			}
			return fmt.Errorf("stream %s: %w", f.Stream, f.Err)
		}
	}
	return nil
}

// StoreEncryption is the file store's encryption at rest from the
// jetstream block (cipher, key, key_file, $LEAFBOX_JS_KEY); it reads the
// key file.
func StoreEncryption(c *config.Config) (filestore.Encryption, error) {
	e, err := c.JetStream.Encryption()
	if err != nil {
		return filestore.Encryption{}, err
	}
	cipher, err := filestore.ParseCipher(e.Cipher)
	if err != nil {
		return filestore.Encryption{}, err
	}
	enc := filestore.Encryption{Cipher: cipher, Key: e.Key, PrevKey: e.PrevKey}
	return enc, enc.Validate()
}
