package server

import (
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/subject"
)

// ErrInvalidSubject is returned for a subject that cannot be used.
var ErrInvalidSubject = errors.New("server: invalid subject")

// Msg is a message handed to an in-process subscriber. Its slices are
// borrowed from the publisher: valid only while the handler runs, and
// read-only; copy what must be kept. Header is nil when the message has
// none.
type Msg struct {
	Subject []byte
	// Route is the subject the message was routed by. It equals Subject
	// except for messages published with Conn.PublishAs (JetStream
	// deliveries), where it is the deliver subject or pull inbox and
	// Subject is the stored message's subject. A leaf link forwards by
	// Route.
	Route  []byte
	Reply  []byte
	Header []byte
	Data   []byte
	// Via is what an in-process publisher passed to PublishBytesVia, nil
	// otherwise. A handler runs on the publisher's goroutine, so it may
	// use it for the publisher's own state: the MQTT listener defers a
	// subscriber's socket write to the end of the publisher's read batch.
	Via any
}

// MsgHandler receives messages for an in-process subscription. It runs on
// the publisher's goroutine, so it must not block for long: hand slow work
// to a goroutine of its own.
type MsgHandler func(m Msg)

// Conn is an in-process connection bound to one account: JetStream,
// bridges and the leaf node publish and subscribe through it without a
// socket. It is safe for concurrent use.
type Conn struct {
	srv *Server
	acc *account

	// noEcho keeps the connection's own publishes from its own
	// subscriptions (a leaf link must not loop remote messages back).
	noEcho bool
	// combined, when set, receives every message for the connection's
	// subscriptions once (InProcessCombined); set before subscribing.
	combined CombinedHandler

	mu     sync.Mutex
	subs   map[*subscription]struct{}
	closed bool
}

// Subscription is an in-process subscription made by Conn.Subscribe.
type Subscription struct {
	conn *Conn
	sub  *subscription
}

// InProcess returns a new in-process connection bound to account ("" for
// the global account).
func (s *Server) InProcess(account string) *Conn {
	if account == "" {
		account = auth.GlobalAccount
	}
	return &Conn{srv: s, acc: s.lookupAccount(account), subs: make(map[*subscription]struct{})}
}

// SetNoEcho stops the connection's publishes from reaching its own
// subscriptions. Call it before publishing.
func (ic *Conn) SetNoEcho() { ic.noEcho = true }

// Subscribe registers h for messages matching subj (wildcards allowed),
// in queue group queue when not empty.
func (ic *Conn) Subscribe(subj, queue string, h MsgHandler) (*Subscription, error) {
	if !subject.Valid(subj) || (queue != "" && !subject.ValidQueue(queue)) {
		return nil, ErrInvalidSubject
	}
	if ic.combined != nil {
		h = combinedSub
	}
	sub := &subscription{handler: h, conn: ic, subject: subj, queue: queue}
	ic.mu.Lock()
	if ic.closed {
		ic.mu.Unlock()
		return nil, ErrServerClosed
	}
	ic.subs[sub] = struct{}{}
	ic.mu.Unlock()
	if err := ic.acc.addSub(sub); err != nil {
		ic.mu.Lock()
		delete(ic.subs, sub)
		ic.mu.Unlock()
		return nil, err
	}
	return &Subscription{conn: ic, sub: sub}, nil
}

// Unsubscribe removes the subscription; it is idempotent.
func (s *Subscription) Unsubscribe() {
	ic := s.conn
	ic.mu.Lock()
	_, ok := ic.subs[s.sub]
	delete(ic.subs, s.sub)
	ic.mu.Unlock()
	if ok {
		ic.acc.removeSub(s.sub)
	}
}

// Publish routes a message to the account's subscribers and returns how
// many received it. hdr is a complete NATS header block or nil.
func (ic *Conn) Publish(subj, reply string, hdr, data []byte) int {
	return ic.PublishAs(subj, subj, reply, hdr, data)
}

// PublishAs routes a message by route but shows it to subscribers under
// subject shown, as JetStream delivers a stored message to a consumer's
// delivery subject or pull inbox under the message's own subject.
func (ic *Conn) PublishAs(route, shown, reply string, hdr, data []byte) int {
	// Deliveries copy subject and reply and handlers must not modify
	// them, so read-only views of the strings do.
	return ic.PublishBytes(unsafeBytes(route), unsafeBytes(shown), unsafeBytes(reply), hdr, data)
}

// PublishBytes is PublishAs with the subjects and reply as bytes, for a
// publisher that holds them in a buffer (a leaf link's read buffer): it
// allocates nothing once the route's match is cached. All slices are
// borrowed for the call and never retained: subscribers copy what they
// keep, and the match cache copies a new key.
func (ic *Conn) PublishBytes(route, shown, reply, hdr, data []byte) int {
	return ic.PublishBytesVia(route, shown, reply, hdr, data, nil)
}

// PublishBytesVia is PublishBytes handing via to the handlers of combined
// connections as Msg.Via.
func (ic *Conn) PublishBytesVia(route, shown, reply, hdr, data []byte, via any) int {
	if !subject.ValidPublish(unsafeString(route)) {
		return 0
	}
	ic.srv.stats.inMsgs.Add(1)
	ic.srv.stats.inBytes.Add(int64(len(hdr) + len(data)))
	res := ic.acc.sl.MatchBytes(route)
	batch := combineBatch{via: via}
	return deliverResult(nil, ic, res, route, shown, reply, hdr, data, &batch)
}

// PublishQueues routes like PublishAs, except that queue groups receive
// the message only when named in queues (one member of each), and none
// does when queues is empty: a leaf hub has already chosen where queue
// delivery happens. It returns the number of deliveries.
func (ic *Conn) PublishQueues(route, shown, reply string, queues [][]byte, hdr, data []byte) int {
	return ic.PublishQueuesBytes(unsafeBytes(route), unsafeBytes(shown), unsafeBytes(reply), queues, hdr, data)
}

// PublishQueuesBytes is PublishQueues with the subjects and reply as
// bytes; like PublishBytes it allocates nothing once the route's match is
// cached (unless a combined connection takes the message), and it
// retains none of the slices.
func (ic *Conn) PublishQueuesBytes(route, shown, reply []byte, queues [][]byte, hdr, data []byte) int {
	if !subject.ValidPublish(unsafeString(route)) {
		return 0
	}
	ic.srv.stats.inMsgs.Add(1)
	ic.srv.stats.inBytes.Add(int64(len(hdr) + len(data)))
	res := ic.acc.sl.MatchBytes(route)
	delivered := 0
	var batch combineBatch
	for _, sub := range res.Plain {
		if combined, takes := sub.combinedTakes(ic); combined {
			if takes {
				batch.add(sub.conn, "")
				delivered++
			}
			continue
		}
		if sub.deliver(nil, ic, route, shown, reply, hdr, data) {
			delivered++
		}
	}
	for i := range res.Queues {
		q := &res.Queues[i]
		if !containsQueue(queues, q.Name) {
			continue
		}
		delivered += deliverToOne(nil, ic, q.Members, route, shown, reply, hdr, data, &batch)
	}
	batch.flush(route, shown, reply, hdr, data)
	return delivered
}

func containsQueue(queues [][]byte, name string) bool {
	for _, q := range queues {
		if string(q) == name {
			return true
		}
	}
	return false
}

// HasInterest reports whether any subscription in the account matches the
// literal subject subj.
func (ic *Conn) HasInterest(subj string) bool {
	return ic.acc.sl.HasInterest(subj)
}

// HasExactInterest reports whether a subscription without a queue group
// is for exactly the literal subject subj, not a wildcard covering it (as
// nats-server's sublist notifications count interest): a client's
// response-inbox wildcard then does not pass for its own subscription.
func (ic *Conn) HasExactInterest(subj string) bool {
	for _, sub := range ic.acc.sl.Match(subj).Plain {
		if sub.subject == subj {
			return true
		}
	}
	return false
}

// HasQueueInterest reports whether queue group queue has a member whose
// subscription matches the literal subject subj.
func (ic *Conn) HasQueueInterest(subj, queue string) bool {
	for _, q := range ic.acc.sl.Match(subj).Queues {
		if q.Name == queue && len(q.Members) > 0 {
			return true
		}
	}
	return false
}

// WatchInterest calls fn for every subscription added to or removed from
// the connection's account from now on, until cancel, as
// Server.WatchInterest does but without a snapshot of the existing ones.
// fn runs with server locks held: it must not block or call back into
// the server.
func (ic *Conn) WatchInterest(fn func(InterestEvent)) (cancel func()) {
	_, cancel = ic.acc.watch(fn, false)
	return cancel
}

// Close removes every subscription of the connection.
func (ic *Conn) Close() {
	ic.mu.Lock()
	subs := ic.subs
	ic.subs = map[*subscription]struct{}{}
	ic.closed = true
	ic.mu.Unlock()
	ic.acc.removeSubs(slices.Collect(maps.Keys(subs)))
}
