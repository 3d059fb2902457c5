package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"sync"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/mqtt"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/store/jetstream"
)

// mqttListener is the MQTT listener (core/mqtt) of the mqtt block, bound
// at Start after JetStream and the uplinks, so that its QoS 1 and 2
// publishes are captured from the first one.
type mqttListener struct {
	srv  *mqtt.Server
	ln   net.Listener
	done chan error
	// durable publishes QoS 1 and 2 messages; nil for none.
	durable *mqttDurable
	// state keeps sessions and retained messages; nil in memory.
	state *mqttState
}

// mqttListenerConfig builds the listener's configuration from cfg's mqtt block;
// cfg has been validated, so its tls block loads.
func mqttListenerConfig(cfg *config.Config, srv *server.Server, log *slog.Logger) (mqtt.Config, error) {
	m := cfg.MQTT
	mc := mqtt.Config{
		Broker:         srv,
		MaxConnections: m.MaxConnections,
		MaxPacketSize:  int(m.MaxPacketSize),
		MaxInflight:    m.MaxInflight,
		MaxQueue:       m.MaxQueue,
		MaxPending:     int(cfg.MaxPending),
		MinKeepAlive:   time.Duration(m.MinKeepAlive),
		MaxKeepAlive:   time.Duration(m.MaxKeepAlive),
		ConnectTimeout: time.Duration(m.ConnectTimeout),
		ParkAfter:      time.Duration(m.ParkAfter), // -1s: never (the listener's negative)
		WriteDeadline:  time.Duration(cfg.WriteDeadline),
		Logger:         log.With("subsystem", "mqtt"),
	}
	if ac := cfg.Auth(); ac != nil {
		a, err := auth.New(*ac)
		if err != nil {
			return mqtt.Config{}, err
		}
		mc.Auth = a
	}
	if t := m.TLS; t != nil {
		tc, err := cfg.ServerTLS("mqtt.tls", t)
		if err != nil {
			return mqtt.Config{}, err
		}
		if t.Verify {
			tc.ClientAuth = tls.RequireAndVerifyClientCert
		}
		mc.TLS = tc
	}
	return mc, nil
}

// startMQTT binds the MQTT listener when the mqtt block is set; state
// keeps its sessions and retained messages.
func startMQTT(cfg *config.Config, srv *server.Server, brk *broker, js *jetstream.Engine, log *slog.Logger) (*mqttListener, error) {
	if cfg.MQTT == nil {
		return nil, nil
	}
	mc, err := mqttListenerConfig(cfg, srv, log)
	if err != nil {
		return nil, err
	}
	d := &mqttDurable{srv: srv, js: js, brk: brk, buses: map[string]*bridgeBus{}}
	mc.Durable = d
	var state *mqttState
	if js != nil {
		// Sessions and retained messages in the engine's internal
		// streams: they survive a restart.
		if state, err = openMQTTState(cfg, js, log); err != nil {
			return nil, err
		}
		mc.State = state
	} else {
		log.Warn("mqtt: JetStream is off: MQTT sessions and retained messages are kept in memory only")
	}
	fail := func(err error) (*mqttListener, error) {
		if state != nil {
			_ = state.Close()
		}
		return nil, err
	}
	ms, err := mqtt.New(mc)
	if err != nil {
		return fail(err)
	}
	ln, err := mqtt.Listen(cfg.MQTTListenAddr())
	if err != nil {
		return fail(fmt.Errorf("mqtt: %w", err))
	}
	l := &mqttListener{srv: ms, ln: ln, done: make(chan error, 1), durable: d, state: state}
	go func() { l.done <- ms.Serve(ln) }()
	return l, nil
}

// MQTTAddr returns the MQTT listener's address, or nil when there is none.
func (a *App) MQTTAddr() net.Addr {
	if l := a.mqtt.Load(); l != nil {
		return l.Addr()
	}
	return nil
}

// Addr returns the listener's address.
func (l *mqttListener) Addr() net.Addr { return l.ln.Addr() }

// close disconnects the MQTT clients and stops the listener; nil-safe.
func (l *mqttListener) close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	err := l.srv.Close(ctx)
	if serr := <-l.done; serr != nil && !errors.Is(serr, mqtt.ErrClosed) {
		err = errors.Join(err, serr)
	}
	l.durable.close()
	if l.state != nil {
		err = errors.Join(err, l.state.Close())
	}
	return err
}

// mqttListenChange reports a reload that changes the mqtt block, which
// needs a restart.
func mqttListenChange(old, cfg *config.Config) error {
	if !reflect.DeepEqual(old.MQTT, cfg.MQTT) {
		return errors.New("mqtt: changing the mqtt block needs a restart")
	}
	return nil
}

// reloadAuth gives the listener the reloaded users and permissions.
func (l *mqttListener) reloadAuth(cfg *config.Config) error {
	if l == nil {
		return nil
	}
	if ac := cfg.Auth(); ac != nil {
		a, err := auth.New(*ac)
		if err != nil {
			return err
		}
		l.srv.SetAuth(a)
		return nil
	}
	l.srv.SetAuth(nil)
	return nil
}

// mqttDurable publishes an MQTT client's QoS 1 and 2 messages so that
// they are durable before the client is acknowledged: into the local
// stream that captures the subject, waiting for its PubAck, as a bridge
// stores (bridge.Store); else as a core publish, after which the uplinks'
// captures are synced as they are before a NATS client's PONG.
type mqttDurable struct {
	srv *server.Server
	js  *jetstream.Engine
	brk *broker

	mu    sync.Mutex
	buses map[string]*bridgeBus
}

func (d *mqttDurable) bus(account string) *bridgeBus {
	d.mu.Lock()
	defer d.mu.Unlock()
	b := d.buses[account]
	if b == nil {
		bb, _, _ := bridgeConnector{d.srv}.Connect(account)
		b = bb.(*bridgeBus)
		d.buses[account] = b
	}
	return b
}

// PublishDurable implements mqtt.DurablePublisher.
func (d *mqttDurable) PublishDurable(account, subj, reply string, hdr, data []byte) error {
	global := account == "" || account == auth.GlobalAccount
	if d.js != nil && global {
		if _, ok := d.js.CapturingStream(subj); ok {
			ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
			defer cancel()
			_, _, err := bridge.Store(ctx, d.bus(account), subj, hdr, data)
			return err
		}
	}
	if err := d.bus(account).Publish(subj, reply, hdr, data); err != nil {
		return err
	}
	d.brk.syncCaptures()
	return nil
}

func (d *mqttDurable) close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, b := range d.buses {
		b.close()
	}
	d.buses = map[string]*bridgeBus{}
}

// addMQTTVarz fills the mqtt object of /varz, shaped as nats-server's.
func (m appMonitor) addMQTTVarz(v *monitor.Varz) {
	l := m.mqtt.Load()
	if l == nil {
		return
	}
	if ta, ok := l.Addr().(*net.TCPAddr); ok {
		v.MQTT.Host, v.MQTT.Port = ta.IP.String(), ta.Port
	}
}

// Connections adds the MQTT clients to the broker's /connz, as
// nats-server lists its MQTT clients: type "mqtt", the client id as name.
func (m appMonitor) Connections(state monitor.ConnState, subs bool) []monitor.ConnSnapshot {
	out := m.Server.Connections(state, subs)
	l := m.mqtt.Load()
	if l == nil || state == monitor.ConnClosed {
		return out
	}
	for _, c := range l.srv.Conns() {
		s := monitor.ConnSnapshot{
			Cid: mqttCidBase + c.ID, Type: "mqtt", Start: c.Start, LastActivity: c.LastActivity,
			Pending: c.Pending, InMsgs: c.InMsgs, OutMsgs: c.OutMsgs, InBytes: c.InBytes, OutBytes: c.OutBytes,
			NumSubs: c.Subs, Name: c.ClientID, Lang: "mqtt", Version: mqttVersion(c.Version), User: c.User, Account: c.Account,
		}
		if ta, ok := c.Remote.(*net.TCPAddr); ok {
			s.IP, s.Port = ta.IP.String(), ta.Port
		}
		if c.TLSVersion != 0 {
			s.TLSVersion = tls.VersionName(c.TLSVersion)
		}
		out = append(out, s)
	}
	return out
}

// mqttCidBase keeps MQTT connection ids apart from the broker's.
const mqttCidBase = 1 << 40

func mqttVersion(v byte) string {
	if v == 5 {
		return "5.0"
	}
	return "3.1.1"
}

// writeMQTTMetrics writes the MQTT listener's counters.
func (m appMonitor) writeMQTTMetrics(mw *monitor.MetricWriter) {
	l := m.mqtt.Load()
	if l == nil {
		return
	}
	st := l.srv.Stats()
	mw.Gauge("leafbox_mqtt_connections", "Open MQTT connections.", float64(st.Connections))
	mw.Gauge("leafbox_mqtt_sessions", "MQTT sessions held, connected or not.", float64(st.Sessions))
	mw.Gauge("leafbox_mqtt_parked_connections", "MQTT connections parked: idle, with no goroutine and no buffer.", float64(st.Parked))
	mw.Counter("leafbox_mqtt_connections_total", "MQTT connections accepted.", float64(st.TotalConns))
	mw.Counter("leafbox_mqtt_in_msgs_total", "Messages received from MQTT clients.", float64(st.InMsgs))
	mw.Counter("leafbox_mqtt_out_msgs_total", "Messages sent to MQTT clients.", float64(st.OutMsgs))
	mw.Counter("leafbox_mqtt_in_bytes_total", "Payload bytes received from MQTT clients.", float64(st.InBytes))
	mw.Counter("leafbox_mqtt_out_bytes_total", "Payload bytes sent to MQTT clients.", float64(st.OutBytes))
	mw.Counter("leafbox_mqtt_protocol_errors_total", "MQTT connections closed for a protocol violation.", float64(st.ProtocolErrors))
	mw.Counter("leafbox_mqtt_auth_failures_total", "MQTT CONNECTs refused for their credentials.", float64(st.AuthFailures))
	mw.Counter("leafbox_mqtt_slow_consumers_total", "MQTT clients cut off as slow consumers.", float64(st.SlowConsumers))
	mw.Counter("leafbox_mqtt_dropped_total", "Messages for MQTT clients dropped (queue full, too large, expired).", float64(st.Dropped))
}
