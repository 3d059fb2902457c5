package app

import (
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/leaf/node"
	"github.com/leafbox/leafbox/store/jetstream"
)

// startMonitor serves the monitoring endpoints (/varz, /connz, /healthz,
// /leafz, /metrics, ...) for p on addr ("host:port"; port 0 picks a free
// one).
func startMonitor(addr string, p monitor.Provider) (*monitor.HTTPServer, error) {
	return monitor.Listen(addr, monitor.NewHandler(p))
}

// monitorProvider returns what the monitor serves: the broker, with the
// leaf runtime and JetStream added.
func (a *App) monitorProvider() monitor.Provider {
	m := appMonitor{Server: a.srv, node: a.node, js: a.js, clock: a.clock, health: &a.health, probe: a.probe, bridges: a.bridges, source: &a.source, shed: a.shed, mqtt: &a.mqtt}
	if id := a.cfg.Identity(); id != nil {
		m.publicKey = id.PublicKey()
	}
	if js := a.cfg.JetStream; js != nil {
		m.jsConfig = *js
	}
	return m
}

// appMonitor is the broker's monitor.Provider with the subsystems the
// broker knows nothing of added: the leaf runtime reports /leafz, the
// remotes in /varz, /uplinkz (uplinks, downlinks, dead letters) and their
// metrics; /jsz, /healthz and /metrics report JetStream. Embedding keeps
// every optional interface the broker implements.
type appMonitor struct {
	*server.Server
	node     *node.Node
	js       *jetstream.Engine // nil when JetStream is off
	jsConfig config.JetStreamConfig
	clock    *clock.Clock     // reported by ClockStatus (clock.go)
	bridges  *bridge.Registry // reported by Bridges (bridges.go)
	// source is /varz config: the configuration in force and where it
	// came from (fleet.go).
	source *atomic.Pointer[monitor.ConfigVarz]
	shed   *shedder                      // /varz's shed; nil without a memory limit
	mqtt   *atomic.Pointer[mqttListener] // reported in /varz, /connz, /metrics (mqtt.go)
	// publicKey is the gateway identity's public key, shown in /varz.
	publicKey string
	// health is the healthz block in force; probe checks the store
	// directories (nil: none); now is the time degraded conditions are
	// measured at (nil: time.Now). See health.go.
	health *atomic.Pointer[config.HealthzConfig]
	probe  *storeProbe
	now    func() time.Time
}

var (
	_ monitor.LeafProvider         = appMonitor{}
	_ monitor.UplinkProvider       = appMonitor{}
	_ monitor.DownlinkProvider     = appMonitor{}
	_ monitor.UplinkLimitsProvider = appMonitor{}
	_ monitor.DeadLetterProvider   = appMonitor{}
	_ monitor.ClockProvider        = appMonitor{}
	_ monitor.BridgeProvider       = appMonitor{}
)

// Uplinks implements monitor.UplinkProvider.
func (m appMonitor) Uplinks() []monitor.UplinkInfo { return m.node.Uplinks() }

// Downlinks implements monitor.DownlinkProvider.
func (m appMonitor) Downlinks() []monitor.DownlinkInfo { return m.node.Downlinks() }

// UplinkLimits implements monitor.UplinkLimitsProvider.
func (m appMonitor) UplinkLimits() *monitor.UplinkLimits { return m.node.UplinkLimits() }

// DeadLetters implements monitor.DeadLetterProvider.
func (m appMonitor) DeadLetters(uplink string, from uint64, limit int) ([]monitor.DeadLetterInfo, error) {
	return m.node.DeadLetters(uplink, from, limit)
}

// Requeue implements monitor.DeadLetterProvider.
func (m appMonitor) Requeue(uplink string, seqs []uint64, all bool) (int, error) {
	return m.node.Requeue(uplink, seqs, all)
}

// Leafs implements monitor.LeafProvider: the links and attached leafs.
func (m appMonitor) Leafs(subs bool) []monitor.LeafInfo { return m.node.Leafs(subs) }

// Varz adds to the broker's /varz the gateway's identity, JetStream, and
// the leaf runtime's links, leafs and remotes.
func (m appMonitor) Varz() *monitor.Varz {
	bv := m.Server.Varz()
	if bv == nil {
		return nil
	}
	v := *bv // the broker's value is only read
	v.PublicKey = m.publicKey
	if m.source != nil {
		if src := m.source.Load(); src != nil {
			v.Config = src
			v.ConfigDigest = src.Hash
		}
	}
	if m.js != nil {
		st := m.js.Stats()
		v.JetStream = monitor.JetStreamVarz{Config: m.jetStreamConfig(st), Stats: jetStreamStats(st)}
	}
	m.node.AddVarz(&v)
	if m.shed != nil {
		v.Shed = m.shed.varz()
	}
	m.addMQTTVarz(&v)
	return &v
}
