package app

import (
	"net"
	"strconv"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf"
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
	m := appMonitor{Server: a.srv, uplinks: a.uplinks, js: a.js}
	if js := a.cfg.JetStream; js != nil {
		m.jsConfig = *js
	}
	return m
}

// appMonitor is the broker's monitor.Provider with the subsystems the
// broker knows nothing of added: /leafz lists the connected links and
// /varz counts them and lists the configured remotes; /jsz, /healthz and
// /metrics report JetStream. Embedding keeps every optional interface the
// broker implements.
type appMonitor struct {
	*server.Server
	uplinks  []*uplink
	js       *jetstream.Engine // nil when JetStream is off
	jsConfig JetStreamConfig
}

var _ monitor.LeafProvider = appMonitor{}

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
	if m.js != nil {
		st := m.js.Stats()
		v.JetStream = monitor.JetStreamVarz{Config: m.jetStreamConfig(st), Stats: jetStreamStats(st)}
	}
	if len(m.uplinks) == 0 {
		return &v
	}
	v.LeafNode.Remotes = make([]monitor.RemoteLeafVarz, len(m.uplinks))
	v.Leafs = 0
	var slow uint64
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
