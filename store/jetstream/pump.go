package jetstream

import (
	"errors"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// outMsg is one message the pump publishes once the consumer lock is
// released: a delivery, a status message or a flow-control request.
type outMsg struct {
	route string // where it goes (deliver subject or request inbox)
	shown string // MSG subject shown; "" shows route
	reply string
	hdr   []byte
	data  []byte
	sseq  uint64 // stream sequence of a delivery, 0 otherwise
	subj  string // stored subject of a delivery
}

// step is what one pump step decided.
type step struct {
	out []outMsg
	// wake is when the pump must run again without a signal; zero
	// waits for a signal.
	wake time.Time
	// more means the step stopped at its batch limit: run again at once.
	more bool
	// flush is a state snapshot to write to the ConsumerStore.
	flush    *store.ConsumerState
	flushGen uint64
	// remove asks the stream to delete the consumer (inactivity).
	remove bool
	// retire lists stream sequences delivered by an ack-none consumer,
	// which interest and workqueue retention treat as acked.
	retire []uint64
	// dropped lists the deliveries given up without an ack, for their
	// advisories.
	dropped []dropped
	// pauseEnded is the end of a pause that just ran out, for its
	// advisory.
	pauseEnded *time.Time
	// pins are the priority-group pin changes, for their advisories.
	pins []pinEvent
}

// pump is the consumer's goroutine: it runs steps and publishes their
// output, in order, with no lock held.
func (c *consumer) pump() {
	defer close(c.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		st := c.step(time.Now())
		for i := range st.out {
			m := &st.out[i]
			shown := m.shown
			if shown == "" {
				shown = m.route
			}
			c.eng.bus.PublishAs(m.route, shown, m.reply, m.hdr, m.data)
		}
		if len(st.dropped) > 0 {
			c.adviseDropped(st.dropped)
		}
		if len(st.pins) > 0 {
			c.advisePins(st.pins)
		}
		if st.pauseEnded != nil {
			c.eng.advisePause(c.s.name, c.name, st.pauseEnded)
		}
		if st.flush != nil {
			c.writeState(st.flush, st.flushGen)
		}
		if len(st.retire) > 0 {
			c.s.acked(st.retire)
		}
		if st.remove {
			// Stopping waits for this goroutine to end, so it runs
			// apart; the consumer is gone from the stream already.
			if c.s.unregister(c) {
				go c.s.finishRemoval(c)
			}
			return
		}
		if st.more {
			select {
			case <-c.quit:
				return
			default:
				continue
			}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		if !st.wake.IsZero() {
			timer.Reset(max(time.Until(st.wake), time.Millisecond))
		}
		select {
		case <-c.quit:
			return
		case <-c.signal:
		case <-timer.C:
		}
	}
}

// step decides what to publish now. It runs on the pump goroutine.
func (c *consumer) step(now time.Time) step {
	c.mu.Lock()
	defer c.mu.Unlock()
	var st step
	if c.closed {
		return st
	}
	nowNS := now.UnixNano()
	if c.ackCheckAt != 0 && nowNS >= c.ackCheckAt {
		c.checkPending(nowNS)
	}
	paused := c.cfg.PauseUntil != nil && now.Before(*c.cfg.PauseUntil)
	if c.cfg.DeliverSubject != "" {
		c.stepPush(now, paused, &st)
	} else {
		c.expirePin(now, &st)
		c.stepPull(now, paused, &st)
	}
	if paused {
		st.wake = earliest(st.wake, *c.cfg.PauseUntil)
	} else if c.pauseEnd {
		c.pauseEnd = false
		if p := c.cfg.PauseUntil; p != nil {
			end := *p
			st.pauseEnded = &end
		}
	}
	if c.ackCheckAt != 0 {
		st.wake = earliest(st.wake, time.Unix(0, c.ackCheckAt))
	}
	if c.cfg.AckPolicy == jsapi.AckNone && c.s.retention() != jsapi.LimitsPolicy {
		for i := range st.out {
			if st.out[i].sseq != 0 {
				st.retire = append(st.retire, st.out[i].sseq)
			}
		}
	}
	if len(c.dropped) > 0 {
		st.dropped, c.dropped = c.dropped, nil
	}
	if len(c.pinEvents) > 0 {
		st.pins, c.pinEvents = c.pinEvents, nil
	}
	if c.inactive(now, &st) {
		st.remove = true
		return st
	}
	if c.stateDirty && c.cstore != nil {
		if due := c.stateFlushedAt.Add(stateFlushInterval); !now.Before(due) {
			st.flush = c.snapshotLocked()
			c.stateGen++
			st.flushGen = c.stateGen
			c.stateDirty = false
			c.stateFlushedAt = now
		} else {
			st.wake = earliest(st.wake, due)
		}
	}
	return st
}

// earliest returns the earlier of a and b, ignoring zero values.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// inactive reports whether an ephemeral-style consumer passed its
// inactive_threshold, and schedules the check otherwise. Caller holds c.mu.
func (c *consumer) inactive(now time.Time, st *step) bool {
	th := c.cfg.InactiveThreshold
	if th <= 0 {
		return false
	}
	var since time.Time
	if c.cfg.DeliverSubject != "" {
		if c.active {
			return false
		}
		since = c.inactiveSince
	} else {
		if len(c.waiting) > 0 {
			return false
		}
		since = c.lastActivity
	}
	if since.IsZero() {
		return false
	}
	due := since.Add(th)
	if !now.Before(due) {
		return true
	}
	st.wake = earliest(st.wake, due)
	return false
}

// source says where getNext took a message from, so it can be put back.
type source uint8

const (
	fromStream source = iota
	fromRedelivery
	fromLastPerSubject
)

// next is a message chosen for delivery.
type next struct {
	msg *store.Msg
	dc  uint64 // delivery count of this delivery
	src source
}

// errStalled means max_ack_pending stops new deliveries.
var errStalled = errors.New("jetstream: max ack pending")

// getNext chooses the next message to deliver: redeliveries first, then
// the last-per-subject queue, then the stream from sseq. Caller holds c.mu.
func (c *consumer) getNext() (next, error) {
	for len(c.redeliverQueue) > 0 {
		seq := c.redeliverQueue[0]
		c.redeliverQueue = c.redeliverQueue[1:]
		p := c.pending[seq]
		if p == nil || !p.queued {
			continue
		}
		p.queued = false
		dc := c.redelivered[seq] + 2
		if max := c.cfg.MaxDeliver; max > 0 && dc > uint64(max) {
			c.noteExceeded(seq, dc-1)
			c.dropPending(seq)
			continue
		}
		m, err := c.s.store.Load(seq, nil)
		if err != nil {
			c.noteGone(seq, termReasonDeleted)
			continue
		}
		c.redelivered[seq]++
		return next{msg: m, dc: dc, src: fromRedelivery}, nil
	}
	if c.cfg.AckPolicy != jsapi.AckNone && c.cfg.MaxAckPending > 0 && len(c.pending) >= c.cfg.MaxAckPending {
		return next{}, errStalled
	}
	for len(c.lastPerSubject) > 0 {
		seq := c.lastPerSubject[0]
		c.lastPerSubject = c.lastPerSubject[1:]
		if c.numPending > 0 {
			c.numPending--
		}
		m, err := c.s.store.Load(seq, nil)
		if err != nil {
			continue
		}
		return next{msg: m, dc: 1, src: fromLastPerSubject}, nil
	}
	if c.sseq > c.streamLast {
		return next{}, store.ErrNotFound
	}
	m, err := c.loadNext(c.sseq)
	if err != nil || m.Seq > c.streamLast {
		if err == nil || errors.Is(err, store.ErrNotFound) {
			// Nothing matches up to what the stream announced.
			c.sseq = c.streamLast + 1
			c.numPending = 0
			return next{}, store.ErrNotFound
		}
		return next{}, err
	}
	c.sseq = m.Seq + 1
	if c.numPending > 0 {
		c.numPending--
	}
	return next{msg: m, dc: 1, src: fromStream}, nil
}

// putBack undoes getNext for a message that could not be delivered.
func (c *consumer) putBack(n next) {
	switch n.src {
	case fromRedelivery:
		c.redelivered[n.msg.Seq]--
		if c.redelivered[n.msg.Seq] == 0 {
			delete(c.redelivered, n.msg.Seq)
		}
		if p := c.pending[n.msg.Seq]; p != nil {
			p.queued = true
		}
		c.redeliverQueue = append([]uint64{n.msg.Seq}, c.redeliverQueue...)
	case fromLastPerSubject:
		c.lastPerSubject = append([]uint64{n.msg.Seq}, c.lastPerSubject...)
		c.numPending++
	default:
		c.sseq = n.msg.Seq
		c.numPending++
	}
}

// loadNext loads the first message at or after start matching the
// filters.
func (c *consumer) loadNext(start uint64) (*store.Msg, error) {
	if len(c.filters) <= 1 {
		f := ""
		if len(c.filters) == 1 {
			f = c.filters[0]
		}
		return c.s.store.LoadNext(f, start, nil)
	}
	var best *store.Msg
	for _, f := range c.filters {
		limit := start
		m, err := c.s.store.LoadNext(f, limit, nil)
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			return nil, err
		}
		if best == nil || m.Seq < best.Seq {
			best = m
		}
	}
	if best == nil {
		return nil, store.ErrNotFound
	}
	return best, nil
}

// deliverTo records the delivery of n to target with the ack subject reply
// (built by ackReply for consumer sequence c.dseq) and appends the message
// to out. It returns the delivery's size as pull max_bytes and flow control
// count it. Caller holds c.mu.
func (c *consumer) deliverTo(n next, target, reply string, now time.Time, out *[]outMsg) int {
	m := n.msg
	dseq := c.dseq
	c.dseq++
	c.lastDelivered = now
	c.lastActivity = now
	nowNS := now.UnixNano()
	if c.cfg.AckPolicy == jsapi.AckNone {
		c.ackFloorConsumer, c.ackFloorStream = dseq, max(c.ackFloorStream, m.Seq)
	} else {
		deadline := nowNS + int64(c.ackWait(n.dc))
		if p := c.pending[m.Seq]; p != nil {
			p.ts, p.deadline = nowNS, deadline
		} else {
			c.pending[m.Seq] = &pendingMsg{cseq: dseq, ts: nowNS, deadline: deadline}
		}
		c.noteDeadline(deadline)
	}
	c.stateDirty = true
	hdr, data := m.Header, m.Data
	if c.cfg.HeadersOnly {
		hdr = proto.AppendHeader(nil, hdr, jsapi.HeaderMsgSize, strconv.Itoa(len(data)))
		data = nil
	}
	*out = append(*out, outMsg{route: target, shown: m.Subject, reply: reply, hdr: hdr, data: data, sseq: m.Seq, subj: m.Subject})
	return len(m.Subject) + len(reply) + len(hdr) + len(data)
}

// ackReply formats the v1 ack subject.
func (c *consumer) ackReply(dc, sseq, dseq uint64, ts int64, pending uint64) string {
	b := make([]byte, 0, len(ackPrefix)+len(c.s.name)+len(c.name)+64)
	b = append(b, ackPrefix...)
	b = append(b, c.s.name...)
	b = append(b, '.')
	b = append(b, c.name...)
	b = append(b, '.')
	b = strconv.AppendUint(b, dc, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, sseq, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, dseq, 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, '.')
	b = strconv.AppendUint(b, pending, 10)
	return string(b)
}
