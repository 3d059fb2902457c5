package jetstream

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// pullRequest is a CONSUMER.MSG.NEXT request waiting for messages.
type pullRequest struct {
	reply     string
	batch     int // messages still wanted
	maxBytes  int // max_bytes as requested; 0 none
	bytesLeft int // max_bytes budget left
	delivered int
	noWait    bool
	expires   time.Time // zero: never
	hb        time.Duration
	hbNext    time.Time
	// hasPG marks a JSON request, whose priority-group fields pg holds
	// (nats-server has none for an empty or bare-number body).
	hasPG bool
	pg    jsapi.PriorityGroup
}

// statusHeader builds a header-only status message.
func statusHeader(code int, text string, kv ...string) []byte {
	return proto.AppendStatusHeader(nil, code, text, kv...)
}

// pendingHeader builds a status carrying the request's unused batch and
// bytes, as pull clients need to account for outstanding requests.
func pendingHeader(code int, text string, wr *pullRequest) []byte {
	return statusHeader(code, text,
		jsapi.HeaderPendingMessages, strconv.Itoa(wr.batch),
		jsapi.HeaderPendingBytes, strconv.Itoa(wr.bytesLeft))
}

// handleNext queues a pull request. Immediate refusals are answered here;
// everything else is the pump's.
func (c *consumer) handleNext(reply string, body []byte) {
	if reply == "" {
		return
	}
	send := func(hdr []byte) { c.eng.bus.Publish(reply, "", hdr, nil) }
	req, err := jsapi.ParseNextRequest(body)
	if req.Batch <= 0 {
		req.Batch = 1
	}

	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		send(statusHeader(409, jsapi.StatusConsumerDeleted))
		return
	}
	cfg := &c.cfg
	if cfg.DeliverSubject != "" {
		c.mu.Unlock()
		send(statusHeader(409, jsapi.StatusConsumerIsPush))
		return
	}
	if err != nil {
		c.mu.Unlock()
		send(statusHeader(400, "Bad Request - "+err.Error()))
		return
	}
	if cfg.MaxRequestBatch > 0 && req.Batch > cfg.MaxRequestBatch {
		c.mu.Unlock()
		send(statusHeader(409, fmt.Sprintf("Exceeded MaxRequestBatch of %d", cfg.MaxRequestBatch)))
		return
	}
	if req.Expires > 0 && cfg.MaxRequestExpires > 0 && req.Expires > cfg.MaxRequestExpires {
		c.mu.Unlock()
		send(statusHeader(409, fmt.Sprintf("Exceeded MaxRequestExpires of %v", cfg.MaxRequestExpires)))
		return
	}
	if req.MaxBytes > 0 && cfg.MaxRequestMaxBytes > 0 && req.MaxBytes > cfg.MaxRequestMaxBytes {
		c.mu.Unlock()
		send(statusHeader(409, fmt.Sprintf("Exceeded MaxRequestMaxBytes of %v", cfg.MaxRequestMaxBytes)))
		return
	}
	now := time.Now()
	hasPG := isJSONRequest(body)
	if hasPG {
		if ok, status := cfg.PriorityGroupAllowed(&req.PriorityGroup); !ok {
			c.mu.Unlock()
			send(statusHeader(400, status))
			return
		}
		if cfg.PriorityPolicy != jsapi.PriorityNone && c.pinID != "" {
			switch req.ID {
			case c.pinID:
				// The pinned client is still there: its pin lasts.
				c.pinExpires = now.Add(cfg.PinnedTTL)
			case "":
			default:
				c.mu.Unlock()
				send(statusHeader(423, jsapi.StatusPinIDMismatch))
				return
			}
		}
	}
	c.lastActivity = now
	if req.NoWait {
		avail := c.numPending + uint64(len(c.redeliverQueue))
		if avail == 0 && req.Expires == 0 {
			c.mu.Unlock()
			send(statusHeader(404, jsapi.StatusNoMessages))
			return
		}
		if avail > 0 {
			var outstanding uint64
			for _, wr := range c.waiting {
				outstanding += uint64(wr.batch)
			}
			if avail < outstanding {
				c.mu.Unlock()
				send(statusHeader(408, jsapi.StatusRequestsPending))
				return
			}
		}
	}
	maxWaiting := cfg.MaxWaiting
	if maxWaiting <= 0 {
		maxWaiting = jsapi.DefaultMaxWaiting
	}
	if len(c.waiting) >= maxWaiting {
		c.mu.Unlock()
		// With heartbeats the client waits for missing heartbeats rather
		// than re-requesting at once, so a refusal would only spin it.
		if req.Heartbeat == 0 {
			send(statusHeader(409, jsapi.StatusExceededMaxWaiting))
		}
		return
	}
	wr := &pullRequest{
		reply:     reply,
		batch:     req.Batch,
		maxBytes:  req.MaxBytes,
		bytesLeft: req.MaxBytes,
		noWait:    req.NoWait,
		hb:        req.Heartbeat,
		hasPG:     hasPG,
		pg:        req.PriorityGroup,
	}
	if req.Expires > 0 {
		wr.expires = now.Add(req.Expires)
	}
	if wr.hb > 0 {
		wr.hbNext = now.Add(wr.hb)
	}
	c.enqueue(wr)
	c.mu.Unlock()
	c.kick()
}

// isJSONRequest reports whether a pull request's body is JSON.
func isJSONRequest(body []byte) bool {
	for _, b := range body {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b == '{'
	}
	return false
}

// stepPull serves waiting pull requests. Caller holds c.mu.
func (c *consumer) stepPull(now time.Time, paused bool, st *step) {
	c.processWaiting(now, st)
	if paused || len(c.waiting) == 0 {
		c.scheduleWaiting(st)
		return
	}
	delivered := 0
	eos := false
	for delivered < deliverBatch && len(c.waiting) > 0 {
		n, err := c.getNext()
		if err != nil {
			eos = errors.Is(err, store.ErrNotFound)
			c.pace.caughtUp = c.pace.caughtUp || eos
			break
		}
		if at := c.replayHold(n.msg.Time); !at.IsZero() && now.Before(at) {
			c.putBack(n)
			st.wake = earliest(st.wake, at)
			break
		}
		reply := c.ackReply(n.dc, n.msg.Seq, c.dseq, n.msg.Time, c.numPending)
		size := len(n.msg.Subject) + len(reply) + len(n.msg.Header) + len(n.msg.Data)
		wr := c.nextWaiting(size, now, st)
		if wr == nil {
			c.putBack(n)
			break
		}
		c.paced(n.msg.Time, now)
		c.deliverTo(n, wr.reply, reply, now, &st.out)
		c.withPin(&st.out[len(st.out)-1])
		delivered++
		wr.batch--
		wr.delivered++
		if wr.batch <= 0 {
			if wr.maxBytes > 0 && wr.bytesLeft > 0 {
				st.out = append(st.out, outMsg{route: wr.reply, hdr: pendingHeader(409, jsapi.StatusBatchCompleted, wr)})
			}
			continue
		}
		if wr.hb > 0 {
			wr.hbNext = now.Add(wr.hb)
		}
		// Round robin: a request with room goes to the back (of its
		// priority, for the prioritized policy).
		c.enqueue(wr)
	}
	if delivered == deliverBatch {
		st.more = true
	}
	if eos {
		kept := c.waiting[:0]
		for _, wr := range c.waiting {
			if wr.noWait && (wr.expires.IsZero() || wr.delivered > 0) {
				st.out = append(st.out, outMsg{route: wr.reply, hdr: statusHeader(404, jsapi.StatusNoMessages)})
				c.lastActivity = now
				continue
			}
			kept = append(kept, wr)
		}
		clearTail(c.waiting, len(kept))
		c.waiting = kept
	}
	c.scheduleWaiting(st)
}

// nextWaiting pops the request that gets a message of size bytes, ending
// requests whose max_bytes it would overflow and, for a pinned_client
// consumer, requests carrying a stale pin ID (423). Requests the priority
// policy passes over (unpinned ones while a client is pinned, overflow
// ones below their minimums) move to the back; once all were passed over
// it returns nil. Caller holds c.mu.
func (c *consumer) nextWaiting(size int, now time.Time, st *step) *pullRequest {
	policy := c.cfg.PriorityPolicy
	needPin := policy == jsapi.PriorityPinnedClient && c.pinID == ""
	cycled := 0
	for len(c.waiting) > 0 {
		wr := c.waiting[0]
		assigned := false
		switch {
		case needPin && wr.pg.ID != "":
			c.wrongPin(st)
			continue
		case needPin:
			assigned = c.assignPin(wr, now)
			needPin = !assigned
		case c.pinID != "" && wr.pg.ID == "":
			if c.passOver(&cycled) {
				return nil
			}
			continue
		case c.pinID != "" && wr.pg.ID != c.pinID:
			c.wrongPin(st)
			continue
		}
		if policy == jsapi.PriorityOverflow && wr.hasPG && c.overflowHeld(wr) {
			if c.passOver(&cycled) {
				return nil
			}
			continue
		}
		if wr.maxBytes > 0 {
			if size > wr.bytesLeft {
				st.out = append(st.out, outMsg{route: wr.reply, hdr: pendingHeader(409, jsapi.StatusMessageSizeExceedsMaxBytes, wr)})
				if assigned {
					c.unassignPin()
					needPin = true
				}
				c.dropHead()
				continue
			}
			wr.bytesLeft -= size
			if wr.bytesLeft == 0 {
				wr.batch = 1
			}
		}
		c.dropHead()
		return wr
	}
	return nil
}

// processWaiting expires requests, drops those whose inbox lost interest
// and sends due heartbeats. Caller holds c.mu.
func (c *consumer) processWaiting(now time.Time, st *step) {
	if len(c.waiting) == 0 {
		return
	}
	kept := c.waiting[:0]
	for _, wr := range c.waiting {
		if !wr.expires.IsZero() && !now.Before(wr.expires) {
			st.out = append(st.out, outMsg{route: wr.reply, hdr: pendingHeader(408, jsapi.StatusRequestTimeout, wr)})
			if wr.expires.After(c.lastActivity) {
				c.lastActivity = wr.expires
			}
			continue
		}
		if !c.eng.bus.HasInterest(wr.reply) {
			continue
		}
		if wr.hb > 0 && !now.Before(wr.hbNext) {
			st.out = append(st.out, outMsg{route: wr.reply, hdr: c.heartbeatHeader()})
			wr.hbNext = now.Add(wr.hb)
		}
		kept = append(kept, wr)
	}
	clearTail(c.waiting, len(kept))
	c.waiting = kept
}

// scheduleWaiting sets the wake time for the next expiry or heartbeat.
func (c *consumer) scheduleWaiting(st *step) {
	for _, wr := range c.waiting {
		if !wr.expires.IsZero() {
			st.wake = earliest(st.wake, wr.expires)
		}
		if wr.hb > 0 {
			st.wake = earliest(st.wake, wr.hbNext)
		}
	}
}

// heartbeatHeader builds an idle heartbeat with the last delivered
// sequences. Caller holds c.mu.
func (c *consumer) heartbeatHeader() []byte {
	kv := []string{
		jsapi.HeaderLastConsumer, strconv.FormatUint(c.dseq-1, 10),
		jsapi.HeaderLastStream, strconv.FormatUint(c.sseq-1, 10),
	}
	if c.fcReply != "" {
		kv = append(kv, jsapi.HeaderConsumerStalled, c.fcReply)
	}
	return statusHeader(100, jsapi.StatusIdleHeartbeat, kv...)
}

// clearTail nils the entries of s beyond n so dropped requests are freed.
func clearTail(s []*pullRequest, n int) {
	for i := n; i < len(s); i++ {
		s[i] = nil
	}
}
