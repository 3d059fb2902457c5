package jetstream

import (
	"crypto/rand"
	"errors"
	"strings"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

const (
	// flowControlMaxPending is how many bytes a flow-controlled push
	// consumer may have outstanding; the window starts at 1/16 of it and
	// doubles with each flow-control reply, as in nats-server.
	flowControlMaxPending = 32 << 20
	// interestPollMin and interestPollMax bound how often a push consumer
	// without interest on its deliver subject looks again, on a Bus that
	// is no InterestWatcher; otherwise it sleeps until a subscription
	// change wakes it (interest.go).
	interestPollMin = 20 * time.Millisecond
	interestPollMax = 250 * time.Millisecond
)

// stepPush delivers to the deliver subject while it has interest and flow
// control allows, and sends idle heartbeats. Without interest it sets no
// wake time of its own when the Bus reports subscription changes: the
// next one that may match the deliver subject kicks the pump. Caller
// holds c.mu.
func (c *consumer) stepPush(now time.Time, paused bool, st *step) {
	cfg := &c.cfg
	active := c.pushInterest()
	if active != c.active {
		c.active = active
		if active {
			c.inactiveSince = time.Time{}
			c.interestBackoff = 0
			c.heartbeatAt = now.Add(cfg.Heartbeat)
		} else {
			c.inactiveSince = now
		}
	}
	if !active {
		if c.inactiveSince.IsZero() {
			c.inactiveSince = now
		}
		if !c.eng.pushes.watching {
			c.interestBackoff = min(max(c.interestBackoff*2, interestPollMin), interestPollMax)
			st.wake = earliest(st.wake, now.Add(c.interestBackoff))
		}
		return
	}
	delivered := 0
	for !paused && delivered < deliverBatch {
		if cfg.FlowControl && c.pendingBytes > c.maxPendingBytes {
			break
		}
		n, err := c.getNext()
		if err != nil {
			if errors.Is(err, store.ErrNotFound) {
				c.pace.caughtUp = true // replay original is over
			}
			break
		}
		if at := c.replayHold(n.msg.Time); !at.IsZero() && now.Before(at) {
			c.putBack(n)
			st.wake = earliest(st.wake, at)
			break
		}
		reply := c.ackReply(n.dc, n.msg.Seq, c.dseq, n.msg.Time, c.numPending)
		if at := c.rateHold(len(n.msg.Subject)+len(reply)+len(n.msg.Header)+len(n.msg.Data), now); !at.IsZero() {
			c.putBack(n)
			st.wake = earliest(st.wake, at)
			break
		}
		c.paced(n.msg.Time, now)
		size := c.deliverTo(n, cfg.DeliverSubject, reply, now, &st.out)
		delivered++
		if cfg.FlowControl {
			c.pendingBytes += size
			if c.fcReply == "" && c.pendingBytes > c.maxPendingBytes/2 {
				c.fcReply = c.newFlowControlReply()
				c.fcBytes = c.pendingBytes
				st.out = append(st.out, outMsg{
					route: cfg.DeliverSubject,
					reply: c.fcReply,
					hdr:   statusHeader(100, jsapi.StatusFlowControl),
				})
			}
		}
	}
	if delivered == deliverBatch {
		st.more = true
	}
	if cfg.Heartbeat > 0 {
		if delivered > 0 {
			c.heartbeatAt = now.Add(cfg.Heartbeat)
		} else if !now.Before(c.heartbeatAt) {
			st.out = append(st.out, outMsg{route: cfg.DeliverSubject, hdr: c.heartbeatHeader()})
			c.heartbeatAt = now.Add(cfg.Heartbeat)
		}
		st.wake = earliest(st.wake, c.heartbeatAt)
	}
}

// newFlowControlReply returns a fresh $JS.FC.<stream>.<consumer>.<id>.
func (c *consumer) newFlowControlReply() string {
	const digits = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var b [4]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = digits[int(b[i])%len(digits)]
	}
	return fcPrefix + c.s.name + "." + c.name + "." + string(b[:])
}

// handleFlowControl receives a client's answer to a flow-control request:
// $JS.FC.<stream>.<consumer>.<id>.
func (e *Engine) handleFlowControl(subj, _, _, _ []byte) {
	sub := string(subj)
	rest := strings.TrimPrefix(sub, fcPrefix)
	streamName, rest, ok := strings.Cut(rest, ".")
	if !ok {
		return
	}
	consumerName, _, ok := strings.Cut(rest, ".")
	if !ok {
		return
	}
	s := e.lookup(streamName)
	if s == nil {
		return
	}
	if c := s.lookupConsumer(consumerName); c != nil {
		c.flowControlAnswered(sub)
	}
}

// flowControlAnswered releases the bytes covered by the answered request.
func (c *consumer) flowControlAnswered(reply string) {
	c.mu.Lock()
	if reply != c.fcReply {
		c.mu.Unlock()
		return
	}
	if c.maxPendingBytes < flowControlMaxPending {
		c.maxPendingBytes = min(c.maxPendingBytes*2, flowControlMaxPending)
	}
	c.pendingBytes = max(c.pendingBytes-c.fcBytes, 0)
	c.fcReply, c.fcBytes = "", 0
	c.lastActivity = time.Now()
	c.mu.Unlock()
	c.kick()
}
