package app

import (
	"maps"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/leaf/outbox"
	"github.com/leafbox/leafbox/store/jetstream"
)

// startMonitor serves the monitoring endpoints (/varz, /connz, /healthz,
// /leafz, /metrics, ...) for p on addr ("host:port"; port 0 picks a free
// one).
func startMonitor(addr string, p monitor.Provider) (*monitor.HTTPServer, error) {
	return monitor.Listen(addr, monitor.NewHandler(p))
}

// monitorProvider returns what the monitor serves: the broker, with the
// leafnode links and JetStream added.
func (a *App) monitorProvider() monitor.Provider {
	m := appMonitor{Server: a.srv, uplinks: a.uplinks, listener: a.listener, js: a.js, uplinkStatus: a.UplinkStatus,
		downlinkStatus: a.DownlinkStatus, clock: a.clock, health: &a.health, probe: a.probe, forwarders: a.runningForwarders}
	if id := a.cfg.Identity(); id != nil {
		m.publicKey = id.PublicKey()
	}
	if js := a.cfg.JetStream; js != nil {
		m.jsConfig = *js
	}
	return m
}

// appMonitor is the broker's monitor.Provider with the subsystems the
// broker knows nothing of added: /leafz lists the connected links and
// /varz counts them and lists the configured remotes; /jsz, /healthz and
// /metrics report JetStream; /uplinkz and /metrics report the
// store-and-forward uplinks. Embedding keeps every optional interface the
// broker implements.
type appMonitor struct {
	*server.Server
	uplinks  []*uplink
	listener *leaf.Listener    // nil without leafnodes.listen
	js       *jetstream.Engine // nil when JetStream is off
	jsConfig config.JetStreamConfig
	// uplinkStatus reports the store-and-forward uplinks; they start
	// after the monitor, so it is asked on every request.
	uplinkStatus func() []UplinkStatus
	clock        *clock.Clock // reported by ClockStatus (clock.go)
	// downlinkStatus reports the downlinks, listed in /uplinkz.
	downlinkStatus func() []DownlinkStatus
	// publicKey is the gateway identity's public key, shown in /varz.
	publicKey string
	// health is the healthz block in force; probe checks the store
	// directories (nil: none); now is the time degraded conditions are
	// measured at (nil: time.Now). See health.go.
	health *atomic.Pointer[config.HealthzConfig]
	probe  *storeProbe
	now    func() time.Time
	// forwarders returns the running uplinks, for their dead letters
	// (deadletter.go).
	forwarders func() []*forwarder
}

var (
	_ monitor.LeafProvider   = appMonitor{}
	_ monitor.UplinkProvider = appMonitor{}
	_ monitor.ClockProvider  = appMonitor{}
)

// Uplinks implements monitor.UplinkProvider: one entry per running uplink.
func (m appMonitor) Uplinks() []monitor.UplinkInfo {
	if m.uplinkStatus == nil {
		return nil
	}
	sts := m.uplinkStatus()
	out := make([]monitor.UplinkInfo, len(sts))
	for i, st := range sts {
		out[i] = uplinkInfo(st)
	}
	return out
}

// uplinkInfo maps an uplink's status to its /uplinkz entry.
func uplinkInfo(st UplinkStatus) monitor.UplinkInfo {
	ui := monitor.UplinkInfo{
		Name:             st.Name,
		State:            string(st.State),
		LinkState:        st.LinkState,
		Captured:         st.Captured,
		Stored:           st.Stored,
		Forwarded:        st.Forwarded,
		Acked:            st.Acked,
		Retries:          st.Retries,
		WrongStream:      st.WrongStream,
		InFlight:         st.InFlight,
		BacklogMsgs:      st.BacklogMsgs,
		BacklogBytes:     st.BacklogBytes,
		OldestAgeSeconds: st.OldestAge.Seconds(),
		LastError:        st.LastError,
		AckedBytes:       st.AckedBytes,
		RateMsgs:         st.RateMsgs,
		RateBytes:        st.RateBytes,
		ETASeconds:       st.ETA.Seconds(),
		WatchdogRearms:   st.WatchdogRearms,
		StreamResets:     st.StreamResets,
		HubStream:        st.HubStream,
		HubSeq:           st.HubSeq,
		Priority:         st.Priority,
		MaxRate:          st.MaxRate,
		DailyBudget:      st.DailyBudget,
		BudgetUsed:       st.BudgetUsed,
		Waiting:          st.Waiting,
	}
	if len(st.Dropped) > 0 {
		ui.Dropped = maps.Clone(st.Dropped)
	}
	if !st.LastErrorAt.IsZero() {
		at := st.LastErrorAt.UTC()
		ui.LastErrorAt = &at
	}
	ui.DeadLettered, ui.DeadLetterMsgs, ui.Requeued = st.DeadLettered, st.DeadLetterMsgs, st.Requeued
	ui.Refusals, ui.HubDuplicatesUnexpected = st.Refusals, st.HubDuplicatesUnexpected
	if !st.LastRejectionAt.IsZero() {
		at := st.LastRejectionAt.UTC()
		ui.LastRejection, ui.LastRejectionAt = st.LastRejection, &at
		ui.LastRejectionAgeSeconds = time.Since(st.LastRejectionAt).Seconds()
	}
	return ui
}

// Leafs implements monitor.LeafProvider: one entry per connected link.
func (m appMonitor) Leafs(subs bool) []monitor.LeafInfo {
	var out []monitor.LeafInfo
	for i, up := range m.uplinks {
		st := up.link.Status()
		if st.State != leaf.StateConnected {
			continue
		}
		li := leafInfo(i, st)
		if subs {
			li.Subs = up.local.subjects()
		}
		out = append(out, li)
	}
	if m.listener != nil {
		for _, st := range m.listener.Leafs() {
			out = append(out, acceptedLeafInfo(st, subs))
		}
	}
	return out
}

// leafInfo maps the status of the link of remote i to its /leafz entry. A
// link is no broker connection and has no connection id, so the entry's
// id is the remote's position in leafnodes.remotes, counted from 1.
func leafInfo(i int, st leaf.Status) monitor.LeafInfo {
	li := monitor.LeafInfo{
		ID:          uint64(i + 1),
		Name:        st.ServerName,
		IsSpoke:     true,
		Account:     st.Account,
		InMsgs:      st.InMsgs,
		OutMsgs:     st.OutMsgs,
		InBytes:     st.InBytes,
		OutBytes:    st.OutBytes,
		NumSubs:     uint32(st.Subscriptions),
		Compression: st.Compression,
	}
	if st.RTT > 0 {
		li.RTT = st.RTT.String()
	}
	if host, port, err := net.SplitHostPort(st.RemoteAddr); err == nil {
		li.IP = host
		li.Port, _ = strconv.Atoi(port)
	}
	return li
}

// Varz adds to the broker's /varz the number of connected links, their
// slow consumers, and the configured remotes.
func (m appMonitor) Varz() *monitor.Varz {
	bv := m.Server.Varz()
	if bv == nil {
		return nil
	}
	v := *bv // the broker's value is only read
	v.PublicKey = m.publicKey
	if m.js != nil {
		st := m.js.Stats()
		v.JetStream = monitor.JetStreamVarz{Config: m.jetStreamConfig(st), Stats: jetStreamStats(st)}
	}
	if len(m.uplinks) == 0 && m.listener == nil {
		return &v
	}
	v.Leafs = 0
	var slow uint64
	if m.listener != nil { // leafs attached to leafnodes.listen
		v.Leafs = len(m.listener.Leafs())
		slow = m.listener.SlowConsumers()
	}
	if len(m.uplinks) > 0 {
		v.LeafNode.Remotes = make([]monitor.RemoteLeafVarz, len(m.uplinks))
	}
	for i, up := range m.uplinks {
		v.LeafNode.Remotes[i] = up.varz
		st := up.link.Status()
		if st.State == leaf.StateConnected {
			v.Leafs++
		}
		slow += st.SlowConsumers
	}
	v.SlowConsumers += int64(slow)
	sc := monitor.SlowConsumersStats{}
	if v.SlowConsumersStats != nil {
		sc = *v.SlowConsumersStats
	}
	sc.Leafs = slow
	v.SlowConsumersStats = &sc
	return &v
}

// writeUplinkMetrics writes the leafbox_uplink_* families, one sample per
// uplink labelled uplink="<name>". It writes nothing without uplinks.
func writeUplinkMetrics(mw *monitor.MetricWriter, sts []UplinkStatus) {
	if len(sts) == 0 {
		return
	}
	family := perItemFamily(mw, sts, "uplink", func(st UplinkStatus) string { return st.Name })
	family("leafbox_uplink_captured_total", monitor.Counter, "Messages captured for the uplink.",
		func(st UplinkStatus) float64 { return float64(st.Captured) })
	family("leafbox_uplink_forwarded_total", monitor.Counter, "Publishes toward the hub, retries included.",
		func(st UplinkStatus) float64 { return float64(st.Forwarded) })
	family("leafbox_uplink_acked_total", monitor.Counter, "Messages the hub acknowledged.",
		func(st UplinkStatus) float64 { return float64(st.Acked) })
	mw.Family("leafbox_uplink_dropped_total", monitor.Counter, "Messages lost, by reason; rejected_by_hub counts those moved to the dead-letter store.")
	for _, st := range sts {
		for _, reason := range outbox.DropReasons {
			mw.Sample("leafbox_uplink_dropped_total", float64(st.Dropped[reason]), "uplink", st.Name, "reason", reason)
		}
	}
	family("leafbox_uplink_dead_letter_messages", monitor.Gauge, "Messages the hub refused for good, held in the dead-letter store.",
		func(st UplinkStatus) float64 { return float64(st.DeadLetterMsgs) })
	family("leafbox_uplink_hub_refusals_total", monitor.Counter, "Permanent refusals by the hub, each attempt.",
		func(st UplinkStatus) float64 { return float64(st.Refusals) })
	family("leafbox_uplink_hub_duplicates_unexpected_total", monitor.Counter, "Duplicate PubAcks for messages sent for the first time (id collisions).",
		func(st UplinkStatus) float64 { return float64(st.HubDuplicatesUnexpected) })
	family("leafbox_uplink_backlog_messages", monitor.Gauge, "Messages waiting in the outbox.",
		func(st UplinkStatus) float64 { return float64(st.BacklogMsgs) })
	family("leafbox_uplink_backlog_bytes", monitor.Gauge, "Bytes waiting in the outbox.",
		func(st UplinkStatus) float64 { return float64(st.BacklogBytes) })
	family("leafbox_uplink_oldest_age_seconds", monitor.Gauge, "Age of the oldest message in the outbox; 0 when empty.",
		func(st UplinkStatus) float64 { return st.OldestAge.Seconds() })
	family("leafbox_uplink_connected", monitor.Gauge, "1 when the uplink's leafnode link is connected, else 0.",
		func(st UplinkStatus) float64 {
			if st.LinkState == leaf.StateConnected.String() {
				return 1
			}
			return 0
		})
	writeUplinkScheduleMetrics(mw, sts)
}

// perItemFamily returns a function that writes one metric family with a
// sample per item of items, labelled label="<its name>".
func perItemFamily[T any](mw *monitor.MetricWriter, items []T, label string, name func(T) string) func(family, typ, help string, value func(T) float64) {
	return func(family, typ, help string, value func(T) float64) {
		mw.Family(family, typ, help)
		for _, it := range items {
			mw.Sample(family, value(it), label, name(it))
		}
	}
}
