package node

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/store/jsapi"
)

// startClock starts refreshing the clock's trust and saving its last
// known-good time, and logs its state. stopClock ends it.
func (n *Node) startClock(clk *clock.Clock) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	n.clockStop, n.clockDone = cancel, done
	log := n.log.With("subsystem", "clock")
	go func() {
		defer close(done)
		clk.Run(ctx, func(err error) { log.Warn("saving the last known-good time failed", "error", err) })
	}()
	st := clk.Status()
	log.Info("clock", "trusted", st.Trusted, "source", string(st.Source), "last_known_good", st.LastKnownGood,
		"boot_id", st.BootID, "rejected", string(st.Rejected))
}

// stopClock stops the clock's loop, once.
func (n *Node) stopClock() {
	if n.clockStop != nil {
		n.clockStop()
		<-n.clockDone
		n.clockStop = nil
	}
}

// ClockInfo maps the clock's status to its monitoring form.
func ClockInfo(st clock.Status) *monitor.ClockInfo {
	return &monitor.ClockInfo{
		Trusted:       st.Trusted,
		Source:        string(st.Source),
		Now:           st.Now.UTC(),
		OffsetSeconds: st.Offset.Seconds(),
		LastKnownGood: st.LastKnownGood.UTC(),
		Rejected:      string(st.Rejected),
		BootID:        st.BootID,
		MonoSeconds:   st.Mono.Seconds(),
		HubTime:       st.HubTime.UTC(),
	}
}

// WriteClockMetrics writes leafbox_clock_trusted; nothing for a nil c.
func WriteClockMetrics(mw *monitor.MetricWriter, c *clock.Clock) {
	if c == nil {
		return
	}
	v := 0.0
	if c.Status().Trusted {
		v = 1
	}
	mw.Gauge("leafbox_clock_trusted", "1 when the wall clock is trusted (NTP sync or hub time), else 0.", v)
}

// Bounds of the hub time probe's retries: a first answer that is no
// stream info (the hub stream is not created yet, the hub's JetStream is
// still starting) or none is asked again after probeRetryMin, then after
// twice as long each time, up to probeRetryMax, until one is usable.
const (
	probeRetryMin = 250 * time.Millisecond
	probeRetryMax = 30 * time.Second
)

// hubTimeProbe reads the hub's time for the clock: the "ts" of a
// JetStream stream info response ($JS.<hub domain>.API.STREAM.INFO.<stream>
// answers with the time nats-server built it). The leaf link forwards no
// $JS.API.> (nats-server denies it on leafnode connections), so the hub's
// API is reached through its JetStream domain. Each time the uplink
// becomes ready it asks once, and again with backoff until an answer
// carries the hub's time: a gateway that joins before its hub stream
// exists, or while the hub's JetStream restores its streams, still comes
// to trust the hub's clock without waiting for the link to be cut.
type hubTimeProbe struct {
	clock   *clock.Clock
	conn    Conn
	subject string
	inbox   string // reply prefix, ending in '.'
	log     *slog.Logger

	mu       sync.Mutex
	timer    *time.Timer   // the next retry; nil when none is due
	delay    time.Duration // the wait before the next retry
	answered bool          // a usable answer came since the last request
	stopped  bool
}

// newHubTimeProbe subscribes the probe's reply inbox on conn; the caller
// does it before the link starts, so the hub learns the interest on
// connect.
func newHubTimeProbe(c *clock.Clock, conn Conn, domain, stream string, log *slog.Logger) (*hubTimeProbe, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	p := &hubTimeProbe{
		clock:   c,
		conn:    conn,
		subject: "$JS." + domain + ".API.STREAM.INFO." + stream,
		inbox:   "_INBOX.CLK." + hex.EncodeToString(rnd[:]) + ".",
		log:     log,
	}
	if _, err := conn.Subscribe(p.inbox+">", "", func(m leaf.Msg) { p.handle(m.Data) }); err != nil {
		return nil, err
	}
	return p, nil
}

// request asks the hub for its time, and keeps asking with backoff until
// an answer is usable; the answers arrive at handle.
func (p *hubTimeProbe) request() {
	p.mu.Lock()
	p.answered = false
	p.delay = probeRetryMin
	send := p.armLocked()
	p.mu.Unlock()
	if send {
		p.send()
	}
}

// retry asks again unless an answer was usable.
func (p *hubTimeProbe) retry() {
	p.mu.Lock()
	send := !p.answered && p.armLocked()
	p.mu.Unlock()
	if send {
		p.send()
	}
}

// armLocked arms the next retry and doubles its delay, unless the probe
// is stopped; it reports whether to send a request now. p.mu is held.
func (p *hubTimeProbe) armLocked() bool {
	if p.stopped {
		return false
	}
	if p.timer != nil {
		p.timer.Stop()
	}
	p.timer = time.AfterFunc(p.delay, p.retry)
	p.delay = min(2*p.delay, probeRetryMax)
	return true
}

// send publishes one request, outside p.mu: a reply may be delivered on
// this goroutine.
func (p *hubTimeProbe) send() {
	if p.conn.Publish(p.subject, p.inbox+"1", nil, nil) == 0 {
		p.log.Debug("hub time request not forwarded: no interest", "subject", p.subject)
	}
}

// stop ends the retries; the uplink stops it before closing conn.
func (p *hubTimeProbe) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
}

// streamInfoTime is the part of a stream info response the probe reads.
type streamInfoTime struct {
	jsapi.APIResponse
	TimeStamp time.Time `json:"ts"`
}

// handle reads the hub's answer; an unusable one leaves the retry armed.
func (p *hubTimeProbe) handle(data []byte) {
	var r streamInfoTime
	apiErr, err := jsapi.DecodeReply(data, &r)
	if err != nil || apiErr != nil || r.TimeStamp.IsZero() {
		p.log.Debug("hub time: unusable stream info response", "error", err, "api_error", apiErr != nil)
		return
	}
	p.mu.Lock()
	p.answered = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.mu.Unlock()
	p.clock.ObserveHubTime(r.TimeStamp)
	if st := p.clock.Status(); st.Source == clock.SourceHub {
		p.log.Debug("clock trusted from the hub's time", "hub_time", r.TimeStamp, "offset", st.Offset)
	}
}
