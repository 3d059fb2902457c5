package jetstream

import (
	"time"

	"github.com/leafbox/leafbox/store/jsapi"
)

// This file paces deliveries as nats-server does for replay_policy
// original (push and pull consumers) and rate_limit_bps (push only).
//
// Replay original: until the consumer has caught up with the stream, a
// message is delivered no sooner after the previous delivery than it was
// stored after the previous message (gaps of 1 ms or less are not
// waited). Once caught up, new messages go out at once.
//
// Rate limit: a token bucket of rate_limit_bps/8 bytes per second, as
// deep as the stream's max_msg_size (1 MiB when unset, nats-server's
// default max_payload), starting full; a delivery of n bytes (subject,
// ack reply, headers and body) waits until the bucket holds n bytes, or
// is full for a message larger than the bucket.

// pacing is a consumer's delivery pacing state, guarded by c.mu.
type pacing struct {
	caughtUp bool      // replay original is over
	lastTS   int64     // stored time of the last delivery, 0 none
	lastAt   time.Time // when it went out

	tokens   float64   // rate limit bucket, bytes
	tokensAt time.Time // when tokens was last refilled; zero: full
	burst    float64   // bucket depth, bytes
}

// newPacing returns the pacing of a consumer of a stream whose
// max_msg_size is maxMsgSize.
func newPacing(maxMsgSize int32) pacing {
	p := pacing{burst: defaultRateBurst}
	if maxMsgSize > 0 {
		p.burst = float64(maxMsgSize)
	}
	return p
}

// defaultRateBurst is the bucket depth without a stream max_msg_size.
const defaultRateBurst = 1 << 20

// replayHold returns when the message stored at ts may go out under
// replay original, zero for now. Caller holds c.mu.
func (c *consumer) replayHold(ts int64) time.Time {
	p := &c.pace
	if c.cfg.ReplayPolicy != jsapi.ReplayOriginal || p.caughtUp || p.lastTS == 0 {
		return time.Time{}
	}
	gap := time.Duration(ts - p.lastTS)
	if gap <= time.Millisecond {
		return time.Time{}
	}
	return p.lastAt.Add(gap)
}

// rateHold returns when size bytes may go out under rate_limit_bps,
// zero for now, in which case the bytes are taken. Caller holds c.mu.
func (c *consumer) rateHold(size int, now time.Time) time.Time {
	bps := c.cfg.RateLimit
	if bps == 0 {
		return time.Time{}
	}
	p := &c.pace
	rate := max(float64(bps/8), 1)
	burst := p.burst
	if p.tokensAt.IsZero() {
		p.tokens = burst
	} else if d := now.Sub(p.tokensAt); d > 0 {
		p.tokens = min(burst, p.tokens+d.Seconds()*rate)
	}
	p.tokensAt = now
	need := min(float64(size), burst)
	if p.tokens >= need {
		p.tokens -= float64(size) // a message beyond the bucket borrows
		return time.Time{}
	}
	return now.Add(time.Duration((need - p.tokens) / rate * float64(time.Second)))
}

// paced records a delivery of a message stored at ts. Caller holds c.mu.
func (c *consumer) paced(ts int64, now time.Time) {
	c.pace.lastTS, c.pace.lastAt = ts, now
}
