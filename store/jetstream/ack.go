package jetstream

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leafbox/leafbox/store/jsapi"
)

// Subject prefixes of acks and flow-control answers.
const (
	ackPrefix = "$JS.ACK."
	fcPrefix  = "$JS.FC."
)

// Ack bodies (NATS-COMPAT §4.8).
var (
	ackAck      = []byte("+ACK")
	ackOK       = []byte("+OK")
	ackNak      = []byte("-NAK")
	ackProgress = []byte("+WPI")
	ackNext     = []byte("+NXT")
	ackTerm     = []byte("+TERM")
)

// ackInfo is what an ack subject encodes.
type ackInfo struct {
	stream, consumer string
	delivered        uint64
	sseq, dseq       uint64
}

// parseAckSubject decodes a v1 ($JS.ACK.<stream>.<consumer>.<dc>.<sseq>.
// <dseq>.<ts>.<pending>) or v2 ($JS.ACK.<domain>.<hash>.<stream>.
// <consumer>.<dc>.<sseq>.<dseq>.<ts>.<pending>[.…]) ack subject.
func parseAckSubject(subj string) (ackInfo, bool) {
	var toks [16]string
	parts := toks[:0]
	rest := subj
	for len(parts) < len(toks) {
		tok, tail, more := strings.Cut(rest, ".")
		parts = append(parts, tok)
		if !more {
			break
		}
		rest = tail
	}
	var a ackInfo
	var base int
	switch n := len(parts); {
	case n == 9:
		base = 2
	case n >= 11:
		base = 4
	default:
		return a, false
	}
	a.stream, a.consumer = parts[base], parts[base+1]
	var err1, err2, err3 error
	a.delivered, err1 = strconv.ParseUint(parts[base+2], 10, 64)
	a.sseq, err2 = strconv.ParseUint(parts[base+3], 10, 64)
	a.dseq, err3 = strconv.ParseUint(parts[base+4], 10, 64)
	return a, err1 == nil && err2 == nil && err3 == nil
}

// handleAck is the Bus handler for $JS.ACK.>.
func (e *Engine) handleAck(subj, reply, _, data []byte) {
	a, ok := parseAckSubject(string(subj))
	if !ok {
		return
	}
	s := e.lookup(a.stream)
	if s == nil {
		return
	}
	c := s.lookupConsumer(a.consumer)
	if c == nil {
		return
	}
	rep := string(reply)
	answer := true
	switch {
	case len(data) == 0, bytes.Equal(data, ackAck), bytes.Equal(data, ackOK):
		answer = c.ack(a.sseq, a.dseq, false)
	case bytes.HasPrefix(data, ackNext):
		c.ack(a.sseq, a.dseq, false)
		c.handleNext(rep, data[len(ackNext):])
		answer = false
	case bytes.HasPrefix(data, ackNak):
		if c.nak(a.sseq, a.dseq, data[len(ackNak):]) {
			c.adviseNak(&a)
		}
	case bytes.Equal(data, ackProgress):
		c.progress(a.sseq)
	case bytes.HasPrefix(data, ackTerm):
		answer = c.ack(a.sseq, a.dseq, true)
		c.adviseTerm(&a, data[len(ackTerm):])
	}
	if answer && rep != "" {
		// A double-ack (AckSync) is answered only once the acknowledgement
		// is on disk, so a client that saw the answer never sees the
		// message again after a crash. One that cannot be made durable is
		// not answered: the client's AckSync times out and it may retry.
		if err := c.syncState(); err != nil {
			e.log.Warn("jetstream: ack not made durable, not answered", "stream", c.s.name, "consumer", c.name, "err", err)
			return
		}
		e.bus.Publish(rep, "", nil, nil)
	}
}

// stateSyncer is a consumer store that can make its written updates
// durable on demand (filestore's, when it syncs on an interval).
type stateSyncer interface{ Sync() error }

// syncState writes the consumer's current state and returns once it is
// durable, whatever the sync interval: the newest snapshot is written
// (unless a newer one already was) and the store synced.
func (c *consumer) syncState() error {
	c.mu.Lock()
	if c.cstore == nil {
		c.mu.Unlock()
		return nil
	}
	st := c.snapshotLocked()
	c.stateGen++
	gen := c.stateGen
	c.stateDirty = false
	c.stateFlushedAt = time.Now()
	c.mu.Unlock()
	c.stateWriteMu.Lock()
	defer c.stateWriteMu.Unlock()
	if gen > c.stateWritten {
		if err := c.cstore.Update(st); err != nil {
			c.mu.Lock()
			c.stateDirty = true
			c.mu.Unlock()
			c.kick()
			return err
		}
		c.stateWritten = gen
	}
	if sy, ok := c.cstore.(stateSyncer); ok {
		return sy.Sync()
	}
	return nil
}

// ack acknowledges a delivery (term: and never redeliver it). It reports
// whether the ack referred to a delivered message, which is when a
// double-ack gets its answer.
func (c *consumer) ack(sseq, dseq uint64, term bool) bool {
	c.mu.Lock()
	if c.closed || sseq >= c.sseq && c.pending[sseq] == nil {
		c.mu.Unlock()
		return false
	}
	wasFull := c.cfg.MaxAckPending > 0 && len(c.pending) >= c.cfg.MaxAckPending
	var acked []uint64
	switch c.cfg.AckPolicy {
	case jsapi.AckExplicit:
		if p := c.pending[sseq]; p != nil {
			delete(c.pending, sseq)
			c.moveAckFloor(p.cseq, sseq)
			acked = append(acked, sseq)
		}
		delete(c.redelivered, sseq)
	case jsapi.AckAll:
		if dseq <= c.ackFloorConsumer || sseq <= c.ackFloorStream {
			c.mu.Unlock()
			return true
		}
		c.ackFloorConsumer, c.ackFloorStream = dseq, sseq
		for seq := range c.pending {
			if seq <= sseq {
				delete(c.pending, seq)
				delete(c.redelivered, seq)
				acked = append(acked, seq)
			}
		}
		if len(c.pending) == 0 {
			c.ackFloorConsumer, c.ackFloorStream = c.dseq-1, c.sseq-1
		}
	default:
		c.mu.Unlock()
		return true
	}
	_ = term
	c.lastAcked = time.Now()
	c.lastActivity = c.lastAcked
	// The pump schedules a state flush when it finds the state dirty; it
	// only needs waking when this ack makes it so.
	flush := c.cstore != nil && !c.stateDirty
	c.stateDirty = true
	c.mu.Unlock()
	if len(acked) > 0 {
		c.s.acked(acked)
	}
	if wasFull || flush {
		c.kick()
	}
	return true
}

// moveAckFloor advances the ack floor after the pending delivery
// (dseq, sseq) was acked. Caller holds c.mu.
func (c *consumer) moveAckFloor(dseq, sseq uint64) {
	if len(c.pending) == 0 {
		c.ackFloorConsumer, c.ackFloorStream = c.dseq-1, c.sseq-1
		return
	}
	if dseq != c.ackFloorConsumer+1 {
		return
	}
	c.ackFloorConsumer, c.ackFloorStream = dseq, sseq
	// The floor stops below the oldest delivery still pending. Acks in
	// order find it among the next few sequences; only a gap costs a walk
	// over every pending delivery.
	var low uint64
	for seq := sseq + 1; seq <= sseq+16 && seq > sseq; seq++ {
		if c.pending[seq] != nil {
			low = seq
			break
		}
	}
	if low == 0 {
		for seq := range c.pending {
			if seq > sseq && (low == 0 || seq < low) {
				low = seq
			}
		}
	}
	if low != 0 {
		if p := c.pending[low]; p.cseq > 0 {
			c.ackFloorConsumer, c.ackFloorStream = p.cseq-1, low-1
		}
	}
}

// dropPending forgets a pending delivery that will not be redelivered
// (max_deliver reached, or the message is gone). Caller holds c.mu.
func (c *consumer) dropPending(seq uint64) {
	p := c.pending[seq]
	if p == nil {
		return
	}
	delete(c.pending, seq)
	delete(c.redelivered, seq)
	c.moveAckFloor(p.cseq, seq)
	c.stateDirty = true
}

// nak schedules a redelivery: now, or after the delay in body
// (` {"delay":ns}` or a Go duration); a bad delay is a plain NAK. It
// reports whether the NAK referred to a pending delivery.
func (c *consumer) nak(sseq, dseq uint64, body []byte) bool {
	var delay time.Duration
	hasDelay := false
	if arg := bytes.TrimSpace(body); len(arg) > 0 {
		if arg[0] == '{' {
			var opts jsapi.NakOptions
			if json.Unmarshal(arg, &opts) == nil {
				delay, hasDelay = opts.Delay, true
			}
		} else if d, err := time.ParseDuration(string(arg)); err == nil {
			delay, hasDelay = d, true
		}
	}
	c.mu.Lock()
	p := c.pending[sseq]
	if c.closed || p == nil || dseq <= c.ackFloorConsumer || dseq >= c.dseq {
		c.mu.Unlock()
		return false
	}
	c.lastActivity = time.Now()
	if hasDelay && delay > 0 {
		c.removeFromRedeliverQueue(sseq)
		p.deadline = time.Now().Add(delay).UnixNano()
		c.noteDeadline(p.deadline)
		c.mu.Unlock()
		c.kick()
		return true
	}
	c.queueRedelivery(sseq)
	c.mu.Unlock()
	c.kick()
	return true
}

// progress resets a pending delivery's ack wait (+WPI).
func (c *consumer) progress(sseq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pending[sseq]; p != nil && !c.closed {
		p.deadline = time.Now().Add(c.ackWait(c.redelivered[sseq] + 1)).UnixNano()
		c.lastActivity = time.Now()
	}
}

// ackWait is how long delivery number dc waits for its ack: the backoff
// entry for it (the last one beyond the list) or ack_wait.
func (c *consumer) ackWait(dc uint64) time.Duration {
	if bo := c.cfg.BackOff; len(bo) > 0 {
		i := int(dc) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(bo) {
			i = len(bo) - 1
		}
		return bo[i]
	}
	if c.cfg.AckWait > 0 {
		return c.cfg.AckWait
	}
	return jsapi.DefaultAckWait
}

// noteDeadline makes sure the pump looks at pending deliveries by ns.
// Caller holds c.mu.
func (c *consumer) noteDeadline(ns int64) {
	if c.ackCheckAt == 0 || ns < c.ackCheckAt {
		c.ackCheckAt = ns
	}
}

// queueRedelivery puts sseq on the redelivery queue once. Caller holds
// c.mu.
func (c *consumer) queueRedelivery(sseq uint64) {
	if p := c.pending[sseq]; p != nil && !p.queued {
		p.queued = true
		c.redeliverQueue = append(c.redeliverQueue, sseq)
	}
}

// removeFromRedeliverQueue takes sseq off the redelivery queue. Caller
// holds c.mu.
func (c *consumer) removeFromRedeliverQueue(sseq uint64) {
	p := c.pending[sseq]
	if p == nil || !p.queued {
		return
	}
	p.queued = false
	if i := slices.Index(c.redeliverQueue, sseq); i >= 0 {
		c.redeliverQueue = slices.Delete(c.redeliverQueue, i, i+1)
	}
}

// checkPending queues the deliveries whose deadline passed, oldest first,
// drops those that reached max_deliver, and finds the next deadline.
// Caller holds c.mu.
func (c *consumer) checkPending(now int64) {
	var next int64
	var expired []uint64
	for seq, p := range c.pending {
		if p.queued {
			continue
		}
		if p.deadline > now {
			if next == 0 || p.deadline < next {
				next = p.deadline
			}
			continue
		}
		if max := c.cfg.MaxDeliver; max > 0 && c.redelivered[seq]+1 >= uint64(max) {
			c.noteExceeded(seq, c.redelivered[seq]+1)
			c.dropPending(seq)
			continue
		}
		expired = append(expired, seq)
	}
	slices.Sort(expired)
	for _, seq := range expired {
		c.pending[seq].queued = true
	}
	c.redeliverQueue = append(c.redeliverQueue, expired...)
	c.ackCheckAt = next
}
