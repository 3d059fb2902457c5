package node

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/sublist"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/store/jsapi"
)

// localPubAckTimeout bounds the wait for a local stream's PubAck when a
// downlink delivers into it.
const localPubAckTimeout = 5 * time.Second

// errNoReceiver means no local subscriber or stream took a message.
var errNoReceiver = errors.New("no local subscriber or stream for the subject")

// localDelivery publishes a downlink's messages on the gateway. A message
// is delivered when:
//
//   - a local stream captures its subject (Streams.CapturingStream) and
//     answered the publish with a PubAck, within localPubAckTimeout. The
//     message carries Nats-Msg-Id "<downlink>.<hub stream>.<hub seq>"
//     (unless it has one), so that a redelivery is stored once, and none
//     of the hub publisher's Nats-Expected-* headers, which were meant for
//     the hub stream and would make the local one refuse it every time;
//   - otherwise, when a subscription other than a link's (localReceivers)
//     matches its subject and the broker delivered it to at least one.
//
// Anything else is an error, and the hub sends the message again later.
type localDelivery struct {
	conn      Conn
	streams   Streams // nil without JetStream in the account
	receivers *localReceivers
	idPrefix  string
	inbox     string // PubAck inbox prefix, ending in '.'

	next    atomic.Uint64
	mu      sync.Mutex
	waiters map[string]chan []byte
}

var _ downlink.Local = (*localDelivery)(nil)

// Deliver implements downlink.Local.
func (l *localDelivery) Deliver(ctx context.Context, m downlink.Msg) error {
	if !l.captured(m.Subject) {
		// The links' subscriptions for hub interest would take it too,
		// but they never send it on (deny_exports), so they do not count.
		if !l.receivers.has(m.Subject) || l.conn.Publish(m.Subject, "", m.Header, m.Data) == 0 {
			return errNoReceiver
		}
		return nil
	}
	hdr := withoutExpectations(m.Header)
	if !proto.HasHeaderFold(hdr, "Nats-Msg-Id") {
		hdr = proto.AppendHeader(nil, hdr, "Nats-Msg-Id", l.idPrefix+m.ID)
	}
	reply := l.inbox + strconv.FormatUint(l.next.Add(1), 10)
	ch := make(chan []byte, 1)
	l.mu.Lock()
	if l.waiters == nil {
		l.waiters = map[string]chan []byte{}
	}
	l.waiters[reply] = ch
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.waiters, reply)
		l.mu.Unlock()
	}()
	if l.conn.Publish(m.Subject, reply, hdr, m.Data) == 0 {
		return errNoReceiver
	}
	timer := time.NewTimer(localPubAckTimeout)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return fmt.Errorf("no PubAck from the local stream within %v", localPubAckTimeout)
	case data := <-ch:
		return checkLocalPubAck(data)
	}
}

// checkLocalPubAck returns nil when data is a local stream's PubAck, and
// otherwise what it is instead.
func checkLocalPubAck(data []byte) error {
	ack, e, err := jsapi.DecodePubAck(data)
	if err != nil {
		return fmt.Errorf("invalid local PubAck %q", data)
	}
	if e != nil {
		return fmt.Errorf("local stream refused it: %d (%d) %s", e.Code, e.ErrCode, e.Description)
	}
	if ack.Stream == "" {
		return fmt.Errorf("invalid local PubAck %q", data)
	}
	return nil
}

// handleReply takes a local stream's PubAck.
func (l *localDelivery) handleReply(m leaf.Msg) {
	l.mu.Lock()
	ch := l.waiters[string(m.Subject)]
	l.mu.Unlock()
	if ch != nil {
		select {
		case ch <- append([]byte(nil), m.Data...):
		default:
		}
	}
}

// captured reports whether a local stream stores messages on subj.
func (l *localDelivery) captured(subj string) bool {
	if l.streams == nil {
		return false
	}
	_, ok := l.streams.CapturingStream(subj)
	return ok
}

// withoutExpectations returns the header block hdr without its
// Nats-Expected-* fields (any case); hdr itself when it has none.
func withoutExpectations(hdr []byte) []byte {
	return proto.DeleteHeaders(hdr, func(name []byte) bool { return proto.HeaderNameHasPrefix(name, "Nats-Expected-") })
}

// localReceivers indexes an account's subscriptions other than those the
// links make for hub interest, so that a downlink knows whether a subject
// has a local receiver. The index is a sublist (one entry per
// subscription), so a lookup walks the subject's tokens, not every
// pattern.
type localReceivers struct {
	leafs  *leafConns
	cancel func()

	// mu orders the existing subscriptions before the changes that follow
	// them; the index has its own lock besides.
	mu   sync.Mutex
	subs sublist.Sublist[struct{}]
}

// watchLocalReceivers starts indexing the subscriptions of account. It
// holds mu while the watch starts, so that a change reported meanwhile
// waits until the existing subscriptions are in.
func watchLocalReceivers(b Broker, account string, leafs *leafConns) *localReceivers {
	lr := &localReceivers{leafs: leafs}
	lr.mu.Lock()
	defer lr.mu.Unlock()
	existing, cancel := b.WatchInterest(account, lr.apply)
	lr.cancel = cancel
	for _, ev := range existing {
		lr.applyLocked(ev)
	}
	return lr
}

// apply runs under the broker's locks: it only updates the index.
func (lr *localReceivers) apply(ev InterestEvent) {
	lr.mu.Lock()
	lr.applyLocked(ev)
	lr.mu.Unlock()
}

func (lr *localReceivers) applyLocked(ev InterestEvent) {
	if lr.leafs.has(ev.Origin) {
		return
	}
	if ev.Added {
		_ = lr.subs.Insert(ev.Subject, ev.Queue, struct{}{})
	} else {
		_ = lr.subs.Remove(ev.Subject, ev.Queue, struct{}{})
	}
}

// has reports whether a subscription other than a link's matches the
// literal subject subj. It takes only the index's read lock.
func (lr *localReceivers) has(subj string) bool { return lr.subs.HasInterest(subj) }
