package app

import (
	"fmt"
	"io"
	"time"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf/node"
	"github.com/leafbox/leafbox/store/jetstream"
)

var (
	_ monitor.JetStreamProvider = appMonitor{}
	_ monitor.HealthChecker     = appMonitor{}
	_ monitor.MetricsSource     = appMonitor{}
)

// jetStreamConfig is the JetStream configuration /varz and /jsz report.
func (m appMonitor) jetStreamConfig(st jetstream.Stats) *monitor.JetStreamConfig {
	c := &monitor.JetStreamConfig{
		MaxMemory:  st.MaxMemory,
		MaxStore:   st.MaxStore,
		StoreDir:   m.jsConfig.StoreDir,
		Domain:     st.Domain,
		CompressOK: true,
	}
	// An unset interval is the engine's default, which syncs before every
	// acknowledgement, as "always" does.
	if m.jsConfig.SyncInterval <= 0 {
		c.SyncAlways = true
	} else {
		c.SyncInterval = time.Duration(m.jsConfig.SyncInterval)
	}
	return c
}

func jetStreamStats(st jetstream.Stats) *monitor.JetStreamStats {
	return &monitor.JetStreamStats{
		Memory:         st.Memory,
		Store:          st.Store,
		ReservedMemory: st.ReservedMemory,
		ReservedStore:  st.ReservedStore,
		Accounts:       1,
		API:            monitor.JetStreamAPIStats{Level: st.APILevel, Total: st.APITotal, Errors: st.APIErrors},
	}
}

// Jsz implements monitor.JetStreamProvider. The engine serves the global
// account, the only one /jsz then lists.
func (m appMonitor) Jsz(opts monitor.JszOptions) (*monitor.Jsz, error) {
	if m.js == nil {
		return &monitor.Jsz{Disabled: true}, nil
	}
	st := m.js.Stats()
	jz := &monitor.Jsz{
		JetStreamStats: *jetStreamStats(st),
		Config:         *m.jetStreamConfig(st),
		Streams:        st.Streams,
		Consumers:      st.Consumers,
		Messages:       st.Messages,
		Bytes:          st.Bytes,
		Total:          1,
	}
	if !opts.Accounts && opts.Account == "" {
		return jz, nil
	}
	if opts.Account != "" && opts.Account != globalAccount || opts.Offset > 0 {
		return jz, nil
	}
	acc := &monitor.AccountDetail{Name: globalAccount, ID: globalAccount, JetStreamStats: jz.JetStreamStats}
	if opts.Streams {
		for _, sd := range m.js.Streams(opts.Consumers) {
			d := monitor.StreamDetail{Name: sd.Name, Created: sd.Created, State: sd.State}
			if opts.Config {
				d.Config = sd.Config
			}
			for _, ci := range sd.Consumers {
				d.Consumers = append(d.Consumers, ci)
			}
			acc.Streams = append(acc.Streams, d)
		}
	}
	jz.AccountDetails = []*monitor.AccountDetail{acc}
	return jz, nil
}

// globalAccount is the account the JetStream engine serves.
const globalAccount = "$G"

// CheckHealth implements monitor.HealthChecker: a server configured for
// JetStream that does not run it is unhealthy; so is one whose store
// directory (or outbox directory) takes no writes, or one that skipped a
// stream or consumer it could not load at start. js-enabled-only checks
// only the first.
func (m appMonitor) CheckHealth(opts monitor.HealthzOptions) (int, []monitor.HealthzError) {
	if m.jsConfig.Enabled && m.js == nil {
		return 0, []monitor.HealthzError{{Type: monitor.HealthzErrorJetStream, Error: monitor.JetStreamNotEnabled}}
	}
	if opts.JSEnabledOnly {
		return 0, nil
	}
	problems := append([]monitor.HealthzError(nil), m.probe.check()...)
	if m.js != nil {
		for _, f := range m.js.RestoreFailures() {
			if f.Consumer == "" {
				problems = append(problems, monitor.HealthzError{Type: monitor.HealthzErrorStream, Account: globalAccount,
					Stream: f.Stream, Error: fmt.Sprintf("JetStream stream %q failed to load at start: %v", f.Stream, f.Err)})
			} else {
				problems = append(problems, monitor.HealthzError{Type: monitor.HealthzErrorConsumer, Account: globalAccount,
					Stream: f.Stream, Consumer: f.Consumer,
					Error: fmt.Sprintf("JetStream consumer %q of stream %q failed to load at start: %v", f.Consumer, f.Stream, f.Err)})
			}
		}
	}
	return 0, problems
}

// WriteMetrics implements monitor.MetricsSource with JetStream's and the
// uplinks' figures.
func (m appMonitor) WriteMetrics(w io.Writer) {
	mw := monitor.NewMetricWriter(w)
	if m.js != nil {
		st := m.js.Stats()
		mw.Gauge("leafbox_jetstream_streams", "JetStream streams.", float64(st.Streams))
		mw.Gauge("leafbox_jetstream_consumers", "JetStream consumers.", float64(st.Consumers))
		mw.Gauge("leafbox_jetstream_messages", "Messages stored in JetStream streams.", float64(st.Messages))
		mw.Gauge("leafbox_jetstream_bytes", "Bytes stored in JetStream streams.", float64(st.Bytes))
		mw.Gauge("leafbox_jetstream_memory_bytes", "Bytes held by memory streams.", float64(st.Memory))
		mw.Gauge("leafbox_jetstream_storage_bytes", "Bytes held by file streams.", float64(st.Store))
		mw.Counter("leafbox_jetstream_api_requests_total", "JetStream API requests served.", float64(st.APITotal))
		mw.Counter("leafbox_jetstream_api_errors_total", "JetStream API requests answered with an error.", float64(st.APIErrors))
		mw.Family("leafbox_jetstream_advisories_total", monitor.Counter,
			"JetStream advisories published on $JS.EVENT.ADVISORY.>, by type (built only while someone listens).")
		for _, a := range st.Advisories {
			mw.Sample("leafbox_jetstream_advisories_total", float64(a.Published), "type", a.Type)
		}
	}
	m.node.WriteMetrics(mw)
	m.writeMQTTMetrics(mw)
	node.WriteClockMetrics(mw, m.clock)
}
