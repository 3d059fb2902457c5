package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/subject"
)

// bridgeKinds builds the specs of each kind of bridge (bridge_<kind>.go).
var bridgeKinds = []func(*config.Config) ([]bridge.Spec, error){mqttBridgeSpecs, serialBridgeSpecs, modbusBridgeSpecs}

// bridgeSpecs returns every configured bridge, kind by kind.
func bridgeSpecs(cfg *config.Config) ([]bridge.Spec, error) {
	var specs []bridge.Spec
	for _, kind := range bridgeKinds {
		s, err := kind(cfg)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	return specs, nil
}

// newBridges returns the registry the bridges run in, empty until Start
// applies the configured ones.
func newBridges(srv *server.Server, log *slog.Logger) *bridge.Registry {
	return bridge.NewRegistry(bridge.RegistryConfig{Connector: bridgeConnector{srv}, Logger: log})
}

// applyBridges makes the running bridges those of specs: at Start all of
// them, on Reload only the added, removed and changed ones start or stop
// (bridge.Registry.Apply, which builds them all before it stops any, so a
// bridge that cannot be made changes nothing). Stopping a bridge waits at
// most abortTimeout.
func (a *App) applyBridges(specs []bridge.Spec) error {
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	return withPrefix("bridges", a.bridges.Apply(ctx, specs))
}

// bridgeConnector gives each bridge an in-process client of its own.
type bridgeConnector struct{ srv *server.Server }

// Connect implements bridge.Connector: a client of account without echo,
// so that a bridge never receives its own publishes.
func (c bridgeConnector) Connect(account string) (bridge.Bus, func(), error) {
	conn := c.srv.InProcess(account)
	conn.SetNoEcho()
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	b := &bridgeBus{conn: conn, inbox: "_INBOX.BR." + hex.EncodeToString(rnd[:]) + "."}
	return b, b.close, nil
}

// errBusClosed is returned by a bridge's Bus after its bridge stopped.
var errBusClosed = errors.New("bridge bus closed")

// bridgeBus is a bridge.Bus over an in-process broker connection: the
// bridge declares what it needs and never imports core/server. Requests
// share one subscription on the bus's inbox prefix (made on the first
// request), so a request does not change the account's subscriptions (and
// its match cache) each time.
type bridgeBus struct {
	conn  *server.Conn
	inbox string // prefix of the request inboxes, ends with "."

	mu       sync.Mutex // a leaf; never held while publishing
	closed   bool
	replies  *server.Subscription         // on inbox+"*"; nil before the first request
	pending  map[string]chan<- bridge.Msg // by the inbox's last token
	requests uint64
}

var _ bridge.Bus = (*bridgeBus)(nil)

func (b *bridgeBus) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Publish implements bridge.Bus.
func (b *bridgeBus) Publish(subj, reply string, hdr, data []byte) error {
	if b.isClosed() {
		return errBusClosed
	}
	if !subject.ValidPublish(subj) || (reply != "" && !subject.ValidPublish(reply)) {
		return fmt.Errorf("%w: %q", server.ErrInvalidSubject, subj)
	}
	b.conn.Publish(subj, reply, hdr, data)
	return nil
}

// Subscribe implements bridge.Bus.
func (b *bridgeBus) Subscribe(subj, queue string, h func(bridge.Msg)) (func(), error) {
	if b.isClosed() {
		return nil, errBusClosed
	}
	sub, err := b.conn.Subscribe(subj, queue, func(m server.Msg) {
		h(bridge.Msg{Subject: m.Subject, Reply: m.Reply, Header: m.Header, Data: m.Data})
	})
	if err != nil {
		return nil, err
	}
	return sub.Unsubscribe, nil
}

// Request implements bridge.Bus: it publishes with a reply inbox of its
// own and waits for the first answer. A request nobody receives is
// answered at once with a 503 status, as NATS clients see "no
// responders".
func (b *bridgeBus) Request(ctx context.Context, subj string, hdr, data []byte) (bridge.Msg, error) {
	if !subject.ValidPublish(subj) {
		return bridge.Msg{}, fmt.Errorf("%w: %q", server.ErrInvalidSubject, subj)
	}
	answer := make(chan bridge.Msg, 1)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return bridge.Msg{}, errBusClosed
	}
	if b.replies == nil {
		sub, err := b.conn.Subscribe(b.inbox+"*", "", b.reply)
		if err != nil {
			b.mu.Unlock()
			return bridge.Msg{}, err
		}
		b.replies, b.pending = sub, map[string]chan<- bridge.Msg{}
	}
	b.requests++
	id := strconv.FormatUint(b.requests, 10)
	b.pending[id] = answer
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
	}()
	if b.conn.Publish(subj, b.inbox+id, hdr, data) == 0 {
		return bridge.Msg{Subject: []byte(b.inbox + id), Header: proto.AppendStatusHeader(nil, 503, "", "Nats-Subject", subj)}, nil
	}
	select {
	case m := <-answer:
		return m, nil
	case <-ctx.Done():
		return bridge.Msg{}, ctx.Err()
	}
}

// reply hands an answer to the request waiting for it; only the first
// answer counts.
func (b *bridgeBus) reply(m server.Msg) {
	route := m.Route
	if len(route) < len(b.inbox) {
		return
	}
	id := string(route[len(b.inbox):])
	b.mu.Lock()
	answer := b.pending[id]
	delete(b.pending, id)
	b.mu.Unlock()
	if answer != nil {
		answer <- bridge.Msg{Subject: clone(m.Subject), Header: clone(m.Header), Data: clone(m.Data)}
	}
}

// close drops the bridge's subscriptions; the Bus refuses work after it.
func (b *bridgeBus) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.conn.Close()
}

// clone copies p; nil stays nil.
func clone(p []byte) []byte {
	if p == nil {
		return nil
	}
	return append([]byte{}, p...)
}

// Bridges implements monitor.BridgeProvider.
func (m appMonitor) Bridges() []monitor.BridgeInfo { return bridgeInfos(m.bridges.Statuses()) }

// bridgeInfos shapes the registry's reports for /bridgez and /metrics.
func bridgeInfos(reports []bridge.Report) []monitor.BridgeInfo {
	out := make([]monitor.BridgeInfo, len(reports))
	for i, r := range reports {
		bi := monitor.BridgeInfo{Kind: r.Kind, Name: r.Name, Account: r.Account, State: r.State.String(),
			In: r.In, Out: r.Out, BadFrames: r.BadFrames, Reconnects: r.Reconnects, LastError: r.LastError,
			Drops: make(map[string]uint64, len(bridge.DropReasons))}
		if !r.Since.IsZero() {
			bi.Since = r.Since.UTC()
		}
		for j, reason := range bridge.DropReasons {
			bi.Drops[reason.String()] = r.Drops[j]
		}
		if !r.LastErrorAt.IsZero() {
			at := r.LastErrorAt.UTC()
			bi.LastErrorAt = &at
		}
		bi.Devices = bridgeDevices(r.Devices)
		out[i] = bi
	}
	return out
}

// bridgeDevices shapes a bridge's devices for /bridgez; nil for none.
func bridgeDevices(devices []bridge.DeviceStatus) []monitor.BridgeDevice {
	if devices == nil {
		return nil
	}
	out := make([]monitor.BridgeDevice, len(devices))
	for i, d := range devices {
		bd := monitor.BridgeDevice{Name: d.Name, State: d.State, Polls: d.Polls, MissedPolls: d.MissedPolls, Timeouts: d.Timeouts,
			Exceptions: d.Exceptions, BadFrames: d.BadFrames, Writes: d.Writes,
			LastError: d.LastError, LastException: d.LastException}
		if !d.LastErrorAt.IsZero() {
			at := d.LastErrorAt.UTC()
			bd.LastErrorAt = &at
		}
		out[i] = bd
	}
	return out
}
