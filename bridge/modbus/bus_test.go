package modbus

// A real broker with JetStream for the bridge's tests, and a bridge.Bus
// over its in-process client (bridge/bridgetest's will replace it).

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store/jetstream"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
)

type testBus struct {
	c     *server.Conn
	inbox atomic.Uint64
}

func (b *testBus) Publish(subj, reply string, hdr, data []byte) error {
	if !subject.ValidPublish(subj) {
		return fmt.Errorf("invalid subject %q", subj)
	}
	b.c.Publish(subj, reply, hdr, data)
	return nil
}

func (b *testBus) Subscribe(subj, queue string, h func(bridge.Msg)) (func(), error) {
	sub, err := b.c.Subscribe(subj, queue, func(m server.Msg) {
		h(bridge.Msg{Subject: m.Subject, Reply: m.Reply, Header: m.Header, Data: m.Data})
	})
	if err != nil {
		return nil, err
	}
	return sub.Unsubscribe, nil
}

func (b *testBus) Request(ctx context.Context, subj string, hdr, data []byte) (bridge.Msg, error) {
	inbox := fmt.Sprintf("_INBOX.test.%d", b.inbox.Add(1))
	got := make(chan bridge.Msg, 1)
	unsub, err := b.Subscribe(inbox, "", func(m bridge.Msg) {
		select {
		case got <- bridge.Msg{Subject: clone(m.Subject), Header: clone(m.Header), Data: clone(m.Data)}:
		default:
		}
	})
	if err != nil {
		return bridge.Msg{}, err
	}
	defer unsub()
	b.c.Publish(subj, inbox, hdr, data)
	select {
	case m := <-got:
		return m, nil
	case <-ctx.Done():
		return bridge.Msg{}, ctx.Err()
	}
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

type jsBus struct{ c *server.Conn }

func (b jsBus) Subscribe(subj, queue string, h func(subject, reply, hdr, data []byte)) (func(), error) {
	sub, err := b.c.Subscribe(subj, queue, func(m server.Msg) { h(m.Subject, m.Reply, m.Header, m.Data) })
	if err != nil {
		return nil, err
	}
	return sub.Unsubscribe, nil
}
func (b jsBus) Publish(subj, reply string, hdr, data []byte) int {
	return b.c.Publish(subj, reply, hdr, data)
}
func (b jsBus) PublishAs(route, shown, reply string, hdr, data []byte) int {
	return b.c.PublishAs(route, shown, reply, hdr, data)
}
func (b jsBus) HasInterest(subj string) bool { return b.c.HasInterest(subj) }

// testBroker is a running broker with JetStream, the bridge's Bus and a
// nats.go client.
type testBroker struct {
	bus *testBus
	nc  *nats.Conn
	js  njs.JetStream
}

func newTestBroker(t *testing.T) *testBroker {
	t.Helper()
	srv := servertest.Start(t, server.Options{})
	jsConn := srv.InProcess("")
	eng, err := jetstream.New(jetstream.Config{StoreDir: t.TempDir()}, jsBus{jsConn})
	require.NoError(t, err)
	require.NoError(t, eng.Start())
	bus := &testBus{c: srv.InProcess("")}
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	js, err := njs.New(nc)
	require.NoError(t, err)
	t.Cleanup(func() {
		nc.Close()
		bus.c.Close()
		_ = eng.Close()
		jsConn.Close()
	})
	return &testBroker{bus: bus, nc: nc, js: js}
}

// subscribe returns a channel of the messages on subj.
func (tb *testBroker) subscribe(t *testing.T, subj string) <-chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, 1024)
	sub, err := tb.nc.ChanSubscribe(subj, ch)
	require.NoError(t, err)
	require.NoError(t, tb.nc.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return ch
}

// runBridge runs b as a Runner would: again after each failure, after a
// short pause, until the test ends. It returns the bridge's Status.
func runBridge(t *testing.T, b bridge.Bridge, bus bridge.Bus) *bridge.Status {
	t.Helper()
	st := &bridge.Status{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := b.Run(ctx, bridge.Env{Bus: bus, Status: st}); err == nil {
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return st
}

// waitFor waits, up to 10s, until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}

// next returns the next message from ch, or fails after 10s.
func next(t *testing.T, ch <-chan *nats.Msg, what string) *nats.Msg {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}
}

// none requires that nothing is waiting on ch.
func none(t *testing.T, ch <-chan *nats.Msg, what string) {
	t.Helper()
	select {
	case m := <-ch:
		t.Fatalf("%s: unexpected message %q on %s", what, m.Data, m.Subject)
	default:
	}
}
