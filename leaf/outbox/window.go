package outbox

import "time"

// Bounds of the forwarder's window (see window).
const (
	// DefaultMaxWindow is the most messages the window lets await their
	// PubAck at once.
	DefaultMaxWindow = 32768
	// DefaultMaxWindowBytes is the most bytes (as published) the window
	// lets await their PubAck at once, well below the link's MaxPending.
	DefaultMaxWindowBytes = 8 << 20
)

// minSample is the shortest interval a delivery-rate sample covers, so
// that a loopback hub's microsecond round trips still give a rate.
const minSample = 10 * time.Millisecond

// window sizes how many messages the forwarder keeps awaiting their
// PubAck. A fixed window caps the rate at window ÷ RTT (256 messages over
// a 300 ms link is ~850 messages/s whatever its bandwidth), so the window
// follows the link's bandwidth-delay product instead: each sample
// (at least one smallest round trip long) measures the delivery rate, acks
// per second, and the smallest round trip seen, and while the window was
// full during the sample it becomes rate × RTT times a gain, within
// [floor, max]: four while the sample's round trips stay near the
// smallest (below queueFactor times it: no queue on the link), else two.
//
// While the link is not the limit the rate is window ÷ RTT, so the window
// grows fourfold each round trip; once the link (or the hub) is the limit
// the rate stops growing, a queue builds up, and the window settles at
// twice the product; a longer queue (mean RTT above twice the smallest)
// shrinks it again. A window that was not full (the publishers send less than the
// link carries) is left as it is. Only the forwarder uses it.
type window struct {
	floor, max int // bounds in messages
	maxBytes   int // bound in bytes

	size   int           // current bound in messages
	minRTT time.Duration // smallest round trip seen (0 before the first)

	start   time.Time     // when the current sample began (zero: none yet)
	acks    int           // acks in the current sample
	rttSum  time.Duration // the round trips of those acks, summed
	limited bool          // the window was full during the current sample

	// The spacing of group acks (see ackedGroup): spaceStart is when the
	// first group ack of the current spacing sample arrived, spaceAcks the
	// messages the later ones covered.
	spaceStart time.Time
	spaceAcks  int
}

// queueFactor is how far above the smallest round trip a sample's mean
// may be before the window takes it for a queue on the link: below it the
// window grows by four times the product, above it by twice.
const queueFactor = 1.5

// newWindow returns a window starting at floor messages.
func newWindow(floor, hi, maxBytes int) window {
	return window{floor: floor, max: max(floor, hi), maxBytes: maxBytes, size: floor}
}

// open reports whether another message may be sent with msgs messages of
// bytes bytes in flight; a full window marks the current sample as
// limited by it.
func (w *window) open(msgs, bytes int) bool {
	if msgs >= w.size || bytes >= w.maxBytes {
		w.limited = true
		return false
	}
	return true
}

// acked records the PubAck, at now, of a message sent at sent.
func (w *window) acked(now, sent time.Time) {
	w.record(now, sent)
	w.sample(now)
}

// ackedGroup records one ack, at now, of the messages sent at sent[0..],
// oldest first (a fast batch's flow ack), as one step of the sample: the
// whole group counts toward the rate before the sample may end.
//
// The spacing of group acks also measures the link: the messages of a
// full window leave back to back and reach the hub at the rate the link
// carries them, so the flow acks come back spaced by that rate, one round
// trip after. Once group acks spanning minSpacing are in, the window grows
// (never shrinks: sample does that) to spaceGain times that rate × the
// smallest round trip. A slow-start from the floor takes a round trip per
// fourfold growth (four at 600 ms from 256 messages to a 10 Mbit/s link's
// 2,000), this takes one.
func (w *window) ackedGroup(now time.Time, sent []time.Time) {
	if len(sent) == 0 {
		return
	}
	for _, at := range sent {
		w.record(now, at)
	}
	w.sample(now)
	w.spacing(now, len(sent))
}

// minSpacing is the shortest interval a spacing sample covers. It is
// shorter than minSample: the flow acks of a first window of 256 messages
// compressed to ~45 B come 4.5 ms apart over 10 Mbit/s, and a sample that
// waited for 10 ms would wait a round trip for the next window's. Acks
// closer than this (a loopback hub, or two acks in one TCP segment) say
// nothing about the link and are left to sample.
const minSpacing = time.Millisecond

// spaceGain is the window, in bandwidth-delay products, that the ack
// spacing grows it to: as sample's gain once a queue forms.
const spaceGain = 2

// spacing adds a group ack of n messages at now to the spacing sample,
// growing the window from the rate it measures once it spans minSample.
func (w *window) spacing(now time.Time, n int) {
	if w.spaceStart.IsZero() {
		w.spaceStart = now // the first ack: its messages' interval is unknown
		return
	}
	w.spaceAcks += n
	elapsed := now.Sub(w.spaceStart)
	if elapsed < minSpacing {
		return
	}
	rate := float64(w.spaceAcks) / elapsed.Seconds()
	if want := min(w.max, int(spaceGain*rate*w.minRTT.Seconds())+1); want > w.size {
		w.size = want
	}
	w.spaceStart, w.spaceAcks = now, 0
}

// record adds the ack, at now, of a message sent at sent to the sample.
func (w *window) record(now, sent time.Time) {
	rtt := now.Sub(sent)
	if rtt > 0 && (w.minRTT == 0 || rtt < w.minRTT) {
		w.minRTT = rtt
	}
	if w.start.IsZero() {
		w.start = sent
	}
	w.acks++
	w.rttSum += rtt
}

// sample ends the current sample at now once it covers a round trip,
// resizing the window if it was full.
func (w *window) sample(now time.Time) {
	elapsed := now.Sub(w.start)
	if elapsed < max(w.minRTT, minSample) {
		return
	}
	if w.limited {
		rate := float64(w.acks) / elapsed.Seconds()
		bdp := rate * w.minRTT.Seconds()
		gain := 2.0
		if mean := w.rttSum / time.Duration(w.acks); float64(mean) < queueFactor*float64(w.minRTT) {
			gain = 4 // no queue yet: the link has room, grow faster
		}
		w.size = min(w.max, max(w.floor, int(gain*bdp)+1))
	}
	w.start, w.acks, w.rttSum, w.limited = now, 0, 0, false
}

// reset starts a new round (again from its first message) at half the
// size the last one reached, not below floor, keeping the smallest round
// trip: the link's bandwidth-delay product does not change with a cut or
// a failover, so a backlog drained after an outage does not climb back
// from the floor over a slow link, while a round that failed because the
// link or the hub could not keep up starts lower, and repeated failures
// bring it down to floor.
func (w *window) reset() {
	w.size = max(w.floor, w.size/2)
	w.start, w.acks, w.rttSum, w.limited = time.Time{}, 0, 0, false
	w.spaceStart, w.spaceAcks = time.Time{}, 0
}

// pendingSet is the messages of the current round awaiting their PubAck,
// by outbox sequence, with their bytes.
type pendingSet struct {
	m     map[uint64]sentMsg
	bytes int
}

func newPendingSet() *pendingSet { return &pendingSet{m: map[uint64]sentMsg{}} }

// len returns how many messages await their PubAck.
func (p *pendingSet) len() int { return len(p.m) }

// get returns the message of sequence seq, and whether it awaits one.
func (p *pendingSet) get(seq uint64) (sentMsg, bool) {
	sm, ok := p.m[seq]
	return sm, ok
}

// add records a message sent.
func (p *pendingSet) add(seq uint64, sm sentMsg) {
	p.m[seq] = sm
	p.bytes += sm.size
}

// del forgets the message of sequence seq.
func (p *pendingSet) del(seq uint64) {
	if sm, ok := p.m[seq]; ok {
		p.bytes -= sm.size
		delete(p.m, seq)
	}
}
