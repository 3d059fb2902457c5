package jetstream

import (
	"encoding/json"
	"sync"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Group commit of publish acks.
//
// With Config.SyncInterval "always" (≤ 0) a PubAck must not leave before
// its message is on disk. Waiting for the fsync on the publisher's
// goroutine would fsync once per message, since one connection's
// publishes are handled one after another and a stream stores under its
// lock. Instead the publish path stores the message, which the file
// engine only buffers, and hands the ack to the stream's committer: one
// goroutine that takes every ack queued so far, makes them durable with a
// single store Sync, and then sends them. Publishes that arrive during an
// fsync share the next one, so throughput follows the disk's fsync rate
// times the batch size rather than the fsync rate alone.
//
// Consumers may see a message before its fsync completes. If the fsync
// fails, the queued publishers get an error ack instead.

// committer batches PubAcks behind store syncs.
type committer struct {
	store store.Syncer
	bus   Bus
	name  string

	mu      sync.Mutex
	acks    []queuedAck
	pending bool // something was stored since the last sync
	closed  bool

	signal chan struct{}
	done   chan struct{}
}

// queuedAck is an ack waiting for the sync that makes its message durable.
type queuedAck struct {
	reply string
	body  []byte
}

// newCommitter starts a committer for st.
func newCommitter(st store.Syncer, bus Bus, name string) *committer {
	c := &committer{store: st, bus: bus, name: name, signal: make(chan struct{}, 1), done: make(chan struct{})}
	go c.run()
	return c
}

// queue records that a message was stored and, when reply is set, that
// body must be sent to it once the message is durable. It reports false
// once the committer is closed; the caller then acks itself (closing the
// store syncs it).
func (c *committer) queue(reply string, body []byte) bool {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return false
	}
	if reply != "" {
		c.acks = append(c.acks, queuedAck{reply: reply, body: body})
	}
	c.pending = true
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
	return true
}

// run syncs and acks until close; a final round flushes what is queued.
func (c *committer) run() {
	defer close(c.done)
	for {
		<-c.signal
		c.mu.Lock()
		acks, pending, closed := c.acks, c.pending, c.closed
		c.acks, c.pending = nil, false
		c.mu.Unlock()
		if pending {
			err := c.store.Sync()
			for _, a := range acks {
				body := a.body
				if err != nil {
					body, _ = json.Marshal(jsapi.ErrorPubAck(c.name, jsapi.StoreError(err)))
				}
				c.bus.Publish(a.reply, "", nil, body)
			}
		}
		if closed {
			return
		}
	}
}

// close sends what is queued and stops the goroutine. The store must
// still be open.
func (c *committer) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
	<-c.done
}
