package outbox

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// processReplies applies the PubAcks received so far: each success removes
// its message, also one answering an earlier round (the hub stored it).
// It returns how many messages it removed and the first failure of the
// current round, after applying every success.
func (o *Outbox) processReplies(pending *pendingSet) (int, error) {
	o.ackMu.Lock()
	list := o.ackList
	o.ackList = nil
	o.ackMu.Unlock()
	now := time.Now()
	var done []ackedMsg
	var first error
	var current bool
	dead := 0
	fail := func(err error) {
		if current && first == nil {
			first = err
		}
	}
	for _, r := range list {
		if r.batch != "" {
			continue // a fast batch reply of an earlier round: its messages are sent again
		}
		current = r.round == o.rounds
		ack, apiErr, err := jsapi.DecodePubAck(r.data)
		if err != nil {
			fail(fmt.Errorf("outbox: sequence %d: invalid PubAck %q", r.seq, truncate(r.data)))
			continue
		}
		sent, inRound := pending.get(r.seq)
		inRound = inRound && current
		switch {
		case len(r.data) == 0:
			// A status-only reply: 503, nothing received the message.
			fail(fmt.Errorf("%w: sequence %d: empty PubAck", ErrNoResponders, r.seq))
			continue
		case apiErr != nil:
			err := classifyAPIError(apiErr, fmt.Errorf("outbox: sequence %d: %w", r.seq, hubError{apiErr}))
			var rf *RefusedError
			if inRound && errors.As(err, &rf) {
				ok, derr := o.refuse(r.seq, rf, false)
				if derr != nil {
					err = errors.Join(err, derr)
				}
				if ok {
					pending.del(r.seq)
					dead++
					continue
				}
			}
			fail(err)
			continue
		case ack.Stream == "":
			fail(fmt.Errorf("outbox: sequence %d: invalid PubAck %q", r.seq, truncate(r.data)))
			continue
		case o.cfg.Stream != "" && ack.Stream != o.cfg.Stream:
			o.wrongStream.Add(1)
			o.log.Error("uplink PubAck from an unexpected stream; message kept",
				"seq", r.seq, "stream", ack.Stream, "want", o.cfg.Stream)
			fail(fmt.Errorf("%w: sequence %d stored in %q, want %q", ErrWrongStream, r.seq, ack.Stream, o.cfg.Stream))
			continue
		}
		if ack.Duplicate && inRound && sent.first {
			// Sent once, yet a duplicate: the hub holds another message
			// with this Nats-Msg-Id and dropped this one.
			o.dupUnexpected.Add(1)
			pending.del(r.seq)
			rf := &RefusedError{Reason: ReasonDuplicateID, Err: fmt.Errorf(
				"hub stream %s reports sequence %d, sent for the first time, as a duplicate of its message %d", ack.Stream, r.seq, ack.Sequence)}
			ok, derr := o.refuse(r.seq, rf, true)
			switch {
			case derr != nil:
				fail(errors.Join(rf, derr))
			case ok:
				dead++
			default:
				fail(rf) // kept without a dead-letter stream; the resend is acked as a duplicate
			}
			continue
		}
		if inRound {
			o.win.acked(now, sent.at)
		}
		pending.del(r.seq)
		if !ack.Duplicate {
			o.noteHubSeq(ack.Stream, ack.Sequence)
		}
		o.checkOrder(ack.Stream, r.seq, ack.Sequence)
		done = append(done, ackedMsg{seq: r.seq, size: sent.size, data: sent.data})
	}
	n, err := o.remove(done)
	if err != nil {
		current = true
		fail(err)
	}
	return n + dead, first
}

// orderCheck is what the forwarder knows of the order of its messages in
// the hub stream: the highest outbox sequence acknowledged and where the
// hub stored it.
type orderCheck struct {
	stream   string
	seq, hub uint64
}

// checkOrder counts a reorder when the PubAck of outbox sequence seq
// places it at hub sequence hub, after the hub sequence of a message
// captured later. Each message is acknowledged once (it then leaves the
// outbox), so each reorder is counted once; a duplicate's PubAck carries
// where the first copy went, which is where it stays.
func (o *Outbox) checkOrder(stream string, seq, hub uint64) {
	c := &o.order
	switch {
	case stream != c.stream || seq > c.seq:
		c.stream, c.seq, c.hub = stream, seq, hub
	case seq < c.seq && hub > c.hub:
		o.reordered.Add(1)
		o.log.Warn("uplink message stored in the hub stream after a message captured later (a stream leader lost with publishes in flight); allow_batched on the hub stream keeps the order",
			"seq", seq, "hub_seq", hub, "later_seq", c.seq, "later_hub_seq", c.hub, "stream", stream)
	}
}

// ackedMsg is a message the hub acknowledged, to be removed.
type ackedMsg struct {
	seq        uint64
	size, data int // bytes published, payload bytes
}

// remove deletes the acknowledged messages from the stream and returns
// how many it removed. The run of them that starts at the stream's first
// message, the usual case since PubAcks arrive in order, goes in one purge
// and so costs one sync, not one per message; the rest are removed one by
// one. Each is counted as acknowledged before it is removed, so that
// Status never sees a message gone from the stream yet not acknowledged
// (it would report it dropped).
func (o *Outbox) remove(done []ackedMsg) (int, error) {
	if len(done) == 0 {
		return 0, nil
	}
	slices.SortFunc(done, func(a, b ackedMsg) int { return cmp.Compare(a.seq, b.seq) })
	removed := 0
	run, bytes, data := 0, 0, 0
	for first := o.stream.State().FirstSeq; run < len(done) && done[run].seq == first+uint64(run); run++ {
		bytes += done[run].size
		data += done[run].data
	}
	if run > 1 {
		o.acked.Add(uint64(run))
		n, err := o.stream.Purge(store.PurgeOptions{Sequence: done[run-1].seq + 1})
		o.acked.Add(-uint64(run) + n) // what another remover took first is not ours
		if err != nil {
			return int(n), fmt.Errorf("outbox: remove %d-%d: %w", done[0].seq, done[run-1].seq, err)
		}
		o.meter.ackedBytes.Add(uint64(bytes))
		o.meter.ackedPayload.Add(uint64(data))
		o.meter.touch()
		removed += int(n)
		done = done[run:]
	}
	var firstErr error
	for _, d := range done {
		o.acked.Add(1)
		ok, err := o.stream.Remove(d.seq, false)
		if err != nil || !ok {
			o.acked.Add(^uint64(0)) // not removed by this ack after all
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("outbox: remove %d: %w", d.seq, err)
			}
			continue
		}
		if ok {
			o.meter.ackedBytes.Add(uint64(d.size))
			o.meter.ackedPayload.Add(uint64(d.data))
			o.meter.touch()
			removed++
		}
	}
	return removed, firstErr
}

// truncate shortens a payload for an error message.
func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}

// header returns hdr as published toward the hub: with Nats-Msg-Id added
// when the message has none (stored before Capture fixed the ids: it gets
// the id it was sent with then, "<server>.<uplink>.<sequence>") and, when
// Config.Stream is set, Nats-Expected-Stream.
func (o *Outbox) header(hdr []byte, seq uint64) []byte {
	var add []byte
	if !proto.HasHeaderFold(hdr, HeaderMsgID) {
		add = proto.AppendHeaderField(add, HeaderMsgID, o.legacyBase+strconv.FormatUint(seq, 10))
	}
	if o.cfg.Stream != "" && !proto.HasHeaderFold(hdr, HeaderExpectedStream) {
		add = proto.AppendHeaderField(add, HeaderExpectedStream, o.cfg.Stream)
	}
	if len(add) == 0 {
		return hdr
	}
	return proto.AppendHeaderFields(nil, hdr, add)
}
