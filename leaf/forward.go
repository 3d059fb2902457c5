package leaf

import (
	"bytes"
	"unsafe"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/sublist"
)

// maxInlineQueues is how many queue groups one forwarded message names
// before the list spills to the heap.
const maxInlineQueues = 8

// forward sends a local message to the hub. It is the handler of the local
// subscription made for the hub's interest in pattern, and runs on the
// publisher's goroutine.
//
// A message matching several hub patterns reaches several such handlers;
// only the one for the smallest matching pattern (the route's canonical
// pattern) forwards it, so the hub gets one LMSG per message, as
// nats-server sends one per connection. That LMSG names the hub's queue
// groups matching the subject for which the local account has no member:
// a queue group with a local member is served locally (nats-server prefers
// local queue subscribers over a leaf), one without is served by the hub.
// The message is not sent when the hub has only queue interest and every
// such group has a local member.
func (s *session) forward(pattern string, m Msg) {
	route := m.Route
	if len(route) == 0 {
		route = m.Subject
	}
	var inline [maxInlineQueues]string
	r := s.hub.match(route, inline[:0])
	if r.canonical != pattern {
		return
	}
	subj := unsafe.String(unsafe.SliceData(route), len(route))
	if !s.perms.Load().canPublish(subj) {
		return
	}
	var queueBuf [maxInlineQueues][]byte
	queues := queueBuf[:0]
	if len(r.queues) > 0 {
		local := s.link.localQueues.MatchBytes(route)
		for _, name := range r.queues {
			if !hasQueue(local.Queues, name) {
				queues = append(queues, queueName(name))
			}
		}
	}
	if !r.plain && len(queues) == 0 {
		return
	}
	s.sendLocal(route, m, queues)
}

// hasQueue reports whether a local match result holds queue group name.
func hasQueue[T comparable](queues []sublist.Queue[T], name string) bool {
	for i := range queues {
		if queues[i].Name == name {
			return true
		}
	}
	return false
}

// deliver publishes a message from the hub locally, through the session's
// no-echo connection so that it never returns to the hub. Messages the
// link may not receive (deny_imports, the hub's import permissions, the
// JetStream deny set) are dropped, as nats-server's spoke drops them.
func (s *session) deliver(op *proto.Op) {
	shown, reply, hdr, data := s.received(op)
	subj := op.Subject
	if !s.perms.Load().canReceive(unsafe.String(unsafe.SliceData(subj), len(subj))) {
		return
	}
	if qp, ok := s.local.(QueueFilterPublisher); ok {
		qp.PublishQueues(subj, shown, reply, op.Queues, hdr, data)
		return
	}
	s.local.Publish(subj, shown, reply, hdr, data)
}

// jsDeliveryReply returns the reply to forward a message with that the
// local broker routed by route and shows as subj. For a JetStream delivery
// (route is the deliver subject or pull inbox, subj the stored message's
// subject) it is reply+"@"+subj, built in buf, as nats-server encodes it
// (client.go processMsgResults): the other side routes by the deliver
// subject and shows subj to its subscriber. Otherwise it is reply.
func jsDeliveryReply(buf, route, subj, reply []byte) []byte {
	if len(reply) == 0 || bytes.Equal(route, subj) || jsAckDeliverIndex(reply) >= 0 {
		return reply
	}
	return append(append(append(buf, reply...), '@'), subj...)
}

// jsAckDeliverIndex returns the index of the '@' that nats-server appends
// to a JetStream ack reply ("$JS.ACK.<8 or more tokens>@<subject>") when a
// push delivery crosses a link, or -1.
func jsAckDeliverIndex(reply []byte) int {
	const prefix = "$JS.ACK."
	if len(reply) <= len(prefix) || string(reply[:len(prefix)]) != prefix {
		return -1
	}
	dots := 0
	for i, c := range reply {
		switch c {
		case '.':
			dots++
		case '@':
			if dots >= 8 {
				return i
			}
		}
	}
	return -1
}
