package bridgetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store/jetstream"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Timeout bounds every wait of this package.
const Timeout = 10 * time.Second

// Broker is a real broker for bridge tests: a core/server on 127.0.0.1
// with a JetStream engine storing file streams in t.TempDir(), both
// stopped in t.Cleanup. It is a bridge.Connector, handing each bridge an
// in-process client of its own, as leafbox does.
type Broker struct {
	// Server is the broker.
	Server *server.Server
	// JetStream is the engine, serving the global account.
	JetStream *jetstream.Engine
	t         testing.TB
}

var _ bridge.Connector = (*Broker)(nil)

// NewBroker starts a Broker. JetStream acknowledges a publish only once
// it is on disk, as leafbox's default sync policy does.
func NewBroker(t testing.TB) *Broker {
	t.Helper()
	srv := servertest.Start(t, server.Options{})
	jsConn := srv.InProcess("")
	eng, err := jetstream.New(jetstream.Config{StoreDir: t.TempDir()}, engineBus{jsConn})
	if err != nil {
		t.Fatalf("bridgetest: jetstream: %v", err)
	}
	if err := eng.Start(); err != nil {
		t.Fatalf("bridgetest: jetstream start: %v", err)
	}
	// Registered after servertest's shutdown, so it runs first.
	t.Cleanup(func() {
		if err := eng.Close(); err != nil {
			t.Errorf("bridgetest: jetstream close: %v", err)
		}
		jsConn.Close()
	})
	return &Broker{Server: srv, JetStream: eng, t: t}
}

// Connect implements bridge.Connector: a new in-process client of
// account, without echo (a bridge does not receive its own publishes).
func (b *Broker) Connect(account string) (bridge.Bus, func(), error) {
	c := b.Server.InProcess(account)
	c.SetNoEcho()
	bus := &Bus{conn: c}
	return bus, bus.Close, nil
}

// Bus returns an in-process client of the global account for the test's
// own side (closed in t.Cleanup). Unlike a bridge's, it receives its own
// publishes.
func (b *Broker) Bus(t testing.TB) *Bus {
	bus := &Bus{conn: b.Server.InProcess("")}
	t.Cleanup(bus.Close)
	return bus
}

// HasInterest reports whether anything subscribes subj (a literal) in the
// global account: a bridge's outbound subscription, say.
func (b *Broker) HasInterest(subj string) bool {
	c := b.Server.InProcess("")
	defer c.Close()
	return c.HasInterest(subj)
}

// WaitInterest returns nil once HasInterest(subj) is want, checked at
// once and after every subscription change in the global account, or
// ctx's error.
func (b *Broker) WaitInterest(ctx context.Context, subj string, want bool) error {
	changed := make(chan struct{}, 1)
	_, cancel := b.Server.WatchInterest("", func(server.InterestEvent) {
		select {
		case changed <- struct{}{}:
		default:
		}
	})
	defer cancel()
	for b.HasInterest(subj) != want {
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// AddStream creates a file stream; cfg.Name and cfg.Subjects are
// required, Storage is file unless set, the rest defaults as
// STREAM.CREATE defaults it.
func (b *Broker) AddStream(t testing.TB, cfg jsapi.StreamConfig) {
	t.Helper()
	var resp jsapi.StreamCreateResponse
	b.api(t, "STREAM.CREATE."+cfg.Name, jsapi.StreamCreateRequest{StreamConfig: cfg}, &resp)
}

// PurgeStream removes every message of stream.
func (b *Broker) PurgeStream(t testing.TB, stream string) {
	t.Helper()
	var resp jsapi.StreamPurgeResponse
	b.api(t, "STREAM.PURGE."+stream, struct{}{}, &resp)
}

// StreamState returns stream's state.
func (b *Broker) StreamState(t testing.TB, stream string) jsapi.StreamState {
	t.Helper()
	var resp jsapi.StreamInfoResponse
	b.api(t, "STREAM.INFO."+stream, struct{}{}, &resp)
	if resp.StreamInfo == nil {
		t.Fatalf("bridgetest: stream info %s: no info", stream)
	}
	return resp.State
}

// StoredMsgs returns the messages of stream, in order.
func (b *Broker) StoredMsgs(t testing.TB, stream string) []jsapi.StoredMsg {
	t.Helper()
	st := b.StreamState(t, stream)
	var out []jsapi.StoredMsg
	for seq := st.FirstSeq; st.Msgs > 0 && seq <= st.LastSeq; seq++ {
		var resp jsapi.MsgGetResponse
		if e := b.apiErr(t, "STREAM.MSG.GET."+stream, jsapi.MsgGetRequest{Seq: seq}, &resp); e != nil {
			if e.ErrCode == jsapi.NewNoMessageFoundError().ErrCode {
				continue
			}
			t.Fatalf("bridgetest: message %d of %s: %v", seq, stream, e)
		}
		out = append(out, *resp.Message)
	}
	return out
}

// ConsumerInfo returns the durable consumer's state.
func (b *Broker) ConsumerInfo(t testing.TB, stream, durable string) jsapi.ConsumerInfo {
	t.Helper()
	var resp jsapi.ConsumerInfoResponse
	b.api(t, "CONSUMER.INFO."+stream+"."+durable, struct{}{}, &resp)
	if resp.ConsumerInfo == nil {
		t.Fatalf("bridgetest: consumer info %s/%s: no info", stream, durable)
	}
	return *resp.ConsumerInfo
}

// api sends a JetStream API request and fails t on any error.
func (b *Broker) api(t testing.TB, op string, req any, resp jsapi.Reply) {
	t.Helper()
	if e := b.apiErr(t, op, req, resp); e != nil {
		t.Fatalf("bridgetest: %s: %v", op, e)
	}
}

// apiErr sends a JetStream API request and returns its API error.
func (b *Broker) apiErr(t testing.TB, op string, req any, resp jsapi.Reply) *jsapi.APIError {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatalf("bridgetest: %s: %v", op, err)
	}
	bus := &Bus{conn: b.Server.InProcess("")}
	defer bus.Close()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	reply, err := bus.Request(ctx, "$JS.API."+op, nil, body)
	if err != nil {
		t.Fatalf("bridgetest: %s: %v", op, err)
	}
	apiErr, err := jsapi.DecodeReply(reply.Data, resp)
	if err != nil {
		t.Fatalf("bridgetest: %s: invalid answer %q: %v", op, reply.Data, err)
	}
	return apiErr
}

// ErrClosed is returned by a closed Bus.
var ErrClosed = errors.New("bridgetest: bus closed")

// Bus is a bridge.Bus over an in-process client of a Broker's server.
type Bus struct {
	conn   *server.Conn
	mu     sync.Mutex
	closed bool
}

var _ bridge.Bus = (*Bus)(nil)

func (b *Bus) isClosed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed
}

// Publish implements bridge.Bus.
func (b *Bus) Publish(subj, reply string, hdr, data []byte) error {
	if b.isClosed() {
		return ErrClosed
	}
	if !subject.ValidPublish(subj) || (reply != "" && !subject.ValidPublish(reply)) {
		return fmt.Errorf("bridgetest: invalid subject %q", subj)
	}
	b.conn.Publish(subj, reply, hdr, data)
	return nil
}

// Subscribe implements bridge.Bus.
func (b *Bus) Subscribe(subj, queue string, h func(bridge.Msg)) (func(), error) {
	if b.isClosed() {
		return nil, ErrClosed
	}
	sub, err := b.conn.Subscribe(subj, queue, func(m server.Msg) {
		h(bridge.Msg{Subject: m.Subject, Reply: m.Reply, Header: m.Header, Data: m.Data})
	})
	if err != nil {
		return nil, err
	}
	return sub.Unsubscribe, nil
}

// Request implements bridge.Bus. A request nobody receives is answered
// at once with a 503 status, as a NATS client sees "no responders".
func (b *Bus) Request(ctx context.Context, subj string, hdr, data []byte) (bridge.Msg, error) {
	if b.isClosed() {
		return bridge.Msg{}, ErrClosed
	}
	if !subject.ValidPublish(subj) {
		return bridge.Msg{}, fmt.Errorf("bridgetest: invalid subject %q", subj)
	}
	inbox := "_INBOX.bridgetest." + nextID()
	replies := make(chan bridge.Msg, 1)
	sub, err := b.conn.Subscribe(inbox, "", func(m server.Msg) {
		select {
		case replies <- bridge.Msg{Subject: clone(m.Subject), Header: clone(m.Header), Data: clone(m.Data)}:
		default:
		}
	})
	if err != nil {
		return bridge.Msg{}, err
	}
	defer sub.Unsubscribe()
	if b.conn.Publish(subj, inbox, hdr, data) == 0 {
		return bridge.Msg{Subject: []byte(inbox), Header: proto.AppendStatusHeader(nil, 503, "", "Nats-Subject", subj)}, nil
	}
	select {
	case m := <-replies:
		return m, nil
	case <-ctx.Done():
		return bridge.Msg{}, ctx.Err()
	}
}

// Close removes the bus's subscriptions; later calls fail with ErrClosed.
func (b *Bus) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.conn.Close()
}

var (
	idMu   sync.Mutex
	lastID uint64
)

// nextID returns a process-unique request id.
func nextID() string {
	idMu.Lock()
	defer idMu.Unlock()
	lastID++
	return fmt.Sprint(lastID)
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// engineBus adapts an in-process client to jetstream.Bus.
type engineBus struct{ conn *server.Conn }

func (e engineBus) Subscribe(subj, queue string, h func(subject, reply, hdr, data []byte)) (func(), error) {
	sub, err := e.conn.Subscribe(subj, queue, func(m server.Msg) { h(m.Subject, m.Reply, m.Header, m.Data) })
	if err != nil {
		return nil, err
	}
	return sub.Unsubscribe, nil
}

func (e engineBus) Publish(subj, reply string, hdr, data []byte) int {
	return e.conn.Publish(subj, reply, hdr, data)
}

func (e engineBus) PublishAs(route, shown, reply string, hdr, data []byte) int {
	return e.conn.PublishAs(route, shown, reply, hdr, data)
}

func (e engineBus) HasInterest(subj string) bool { return e.conn.HasInterest(subj) }
