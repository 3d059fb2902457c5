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
	mc.State = mqtt.NewMemState()
	ms, err := mqtt.New(mc)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.MQTTListenAddr())
	if err != nil {
		return nil, fmt.Errorf("mqtt: %w", err)
	}
	l := &mqttListener{srv: ms, ln: ln, done: make(chan error, 1), durable: d}
	go func() { l.done <- ms.Serve(ln) }()
	return l, nil
}

// MQTTAddr returns the MQTT listener's address, or nil when there is none.
func (a *App) MQTTAddr() net.Addr {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mqtt == nil {
		return nil
	}
	return a.mqtt.Addr()
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
