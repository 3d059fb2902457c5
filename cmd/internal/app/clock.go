package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/store/jsapi"
)

// openClock opens the gateway's clock with the machine's sources.
func openClock(cfg *config.Config) (*clock.Clock, error) {
	c, err := clock.Open(clock.Config{StatePath: cfg.ClockStatePath()})
	if err != nil {
		return nil, withPrefix("clock", err)
	}
	return c, nil
}

// startClock starts refreshing the clock's trust and saving its last
// known-good time, and logs its state.
func (a *App) startClock() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.clockStop, a.clockDone = cancel, done
	log := a.log.With("subsystem", "clock")
	go func() {
		defer close(done)
		a.clock.Run(ctx, func(err error) { log.Warn("saving the last known-good time failed", "error", err) })
	}()
	st := a.clock.Status()
	log.Info("clock", "trusted", st.Trusted, "source", string(st.Source), "last_known_good", st.LastKnownGood,
		"boot_id", st.BootID, "rejected", string(st.Rejected))
}

// closeClock stops the clock's loop and saves its state a last time.
func (a *App) closeClock() error {
	if a.clockStop != nil {
		a.clockStop()
		<-a.clockDone
	}
	return a.clock.Close()
}

// ClockStatus implements monitor.ClockProvider.
func (m appMonitor) ClockStatus() *monitor.ClockInfo {
	if m.clock == nil {
		return nil
	}
	return clockInfo(m.clock.Status())
}

// clockInfo maps the clock's status to its monitoring form.
func clockInfo(st clock.Status) *monitor.ClockInfo {
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

// writeClockMetrics writes leafbox_clock_trusted.
func writeClockMetrics(mw *monitor.MetricWriter, c *clock.Clock) {
	if c == nil {
		return
	}
	v := 0.0
	if c.Status().Trusted {
		v = 1
	}
	mw.Gauge("leafbox_clock_trusted", "1 when the wall clock is trusted (NTP sync or hub time), else 0.", v)
}

// hubTimeProbe reads the hub's time for the clock: the "ts" of a
// JetStream stream info response ($JS.<hub domain>.API.STREAM.INFO.<stream>
// answers with the time nats-server built it). The leaf link forwards no
// $JS.API.> (nats-server denies it on leafnode connections), so the hub's
// API is reached through its JetStream domain.
type hubTimeProbe struct {
	clock   *clock.Clock
	conn    *server.Conn
	subject string
	inbox   string // reply prefix, ending in '.'
	log     *slog.Logger
}

// newHubTimeProbe subscribes the probe's reply inbox on conn; the caller
// does it before the link starts, so the hub learns the interest on
// connect.
func newHubTimeProbe(c *clock.Clock, conn *server.Conn, domain, stream string, log *slog.Logger) (*hubTimeProbe, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	p := &hubTimeProbe{
		clock:   c,
		conn:    conn,
		subject: "$JS." + domain + ".API.STREAM.INFO." + stream,
		inbox:   "_INBOX.CLK." + hex.EncodeToString(rnd[:]) + ".",
		log:     log,
	}
	if _, err := conn.Subscribe(p.inbox+">", "", func(m server.Msg) { p.handle(m.Data) }); err != nil {
		return nil, err
	}
	return p, nil
}

// request asks the hub for its time; the answer arrives at handle.
func (p *hubTimeProbe) request() {
	if p.conn.Publish(p.subject, p.inbox+"1", nil, nil) == 0 {
		p.log.Debug("hub time request not forwarded: no interest", "subject", p.subject)
	}
}

// streamInfoTime is the part of a stream info response the probe reads.
type streamInfoTime struct {
	jsapi.APIResponse
	TimeStamp time.Time `json:"ts"`
}

// handle reads the hub's answer.
func (p *hubTimeProbe) handle(data []byte) {
	var r streamInfoTime
	apiErr, err := jsapi.DecodeReply(data, &r)
	if err != nil || apiErr != nil || r.TimeStamp.IsZero() {
		p.log.Debug("hub time: unusable stream info response", "error", err, "api_error", apiErr != nil)
		return
	}
	p.clock.ObserveHubTime(r.TimeStamp)
	if st := p.clock.Status(); st.Source == clock.SourceHub {
		p.log.Debug("clock trusted from the hub's time", "hub_time", r.TimeStamp, "offset", st.Offset)
	}
}
