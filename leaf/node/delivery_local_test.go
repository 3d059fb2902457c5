package node

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/store/jetstream"
)

// jsBus is the JetStream engine's Bus over an in-process connection.
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

// newTestGateway starts a broker with a JetStream engine and returns them
// with a testBroker over the broker.
func newTestGateway(t *testing.T) (*server.Server, *testBroker, *jetstream.Engine) {
	t.Helper()
	srv := servertest.Start(t, server.Options{})
	bus := srv.InProcess("")
	eng, err := jetstream.New(jetstream.Config{StoreDir: t.TempDir()}, jsBus{bus})
	require.NoError(t, err)
	require.NoError(t, eng.Start())
	t.Cleanup(func() {
		_ = eng.Close()
		bus.Close()
	})
	return srv, &testBroker{srv: srv}, eng
}

// TestLocalReceivers: the index counts every subscription of the account
// but the links', plain and queue, existing ones and later changes, until
// the watch is cancelled.
func TestLocalReceivers(t *testing.T) {
	srv, b, _ := newTestGateway(t)
	leafs := &leafConns{}
	link := b.Connect("")
	leafs.add(link)
	_, err := link.Subscribe("cmd.>", "", func(leaf.Msg) {})
	require.NoError(t, err)
	client := srv.InProcess("") // not handed out by the Broker: no origin
	before, err := client.Subscribe("cmd.a", "", func(server.Msg) {})
	require.NoError(t, err)

	lr := watchLocalReceivers(b, "", leafs)
	require.DeepEqual(t, lr.has("cmd.a"), true)  // existing
	require.DeepEqual(t, lr.has("cmd.b"), false) // only the link's cmd.> matches
	q, err := client.Subscribe("cmd.q.*", "workers", func(server.Msg) {})
	require.NoError(t, err)
	require.DeepEqual(t, lr.has("cmd.q.x"), true)
	if n := testing.AllocsPerRun(100, func() { lr.has("cmd.q.x") }); n != 0 {
		t.Errorf("has: %v allocations", n)
	}
	again, err := client.Subscribe("cmd.a", "", func(server.Msg) {})
	require.NoError(t, err)
	before.Unsubscribe()
	require.DeepEqual(t, lr.has("cmd.a"), true) // one of two left
	again.Unsubscribe()
	q.Unsubscribe()
	require.DeepEqual(t, lr.has("cmd.a"), false)
	require.DeepEqual(t, lr.has("cmd.q.x"), false)

	lr.cancel()
	_, err = client.Subscribe("cmd.late", "", func(server.Msg) {})
	require.NoError(t, err)
	require.DeepEqual(t, lr.has("cmd.late"), false)
}

// TestLocalDelivery checks what "delivered" means for a downlink message:
// stored by the local stream that captures it (PubAck awaited, Nats-Msg-Id
// set, Nats-Expected-* removed, a redelivery stored once, a refusal an
// error), or received by a subscriber other than a link's.
func TestLocalDelivery(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, b, eng := newTestGateway(t)
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := njs.New(nc)
	require.NoError(t, err)
	stream, err := js.CreateStream(ctx, njs.StreamConfig{Name: "LOCAL", Subjects: []string{"cmd.>"}, MaxMsgSize: 100})
	require.NoError(t, err)

	leafs := &leafConns{}
	lr := watchLocalReceivers(b, "", leafs)
	t.Cleanup(lr.cancel)
	conn := b.Connect("")
	t.Cleanup(conn.Close)
	d := &localDelivery{conn: conn, streams: eng, receivers: lr, idPrefix: "cmds.", inbox: "_INBOX.DLL.test."}
	_, err = conn.Subscribe(d.inbox+">", "", d.handleReply)
	require.NoError(t, err)

	hdr := []byte("NATS/1.0\r\nNats-Expected-Stream: HUB\r\nX-Op: open\r\n\r\n")
	m := downlink.Msg{Subject: "cmd.door", HubSubject: "site1.cmd.door", Header: hdr, Data: []byte("open"), Stream: "HUB", Seq: 1, ID: "HUB.1"}
	require.NoError(t, d.Deliver(ctx, m))
	require.NoError(t, d.Deliver(ctx, m)) // a redelivery: a duplicate PubAck
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	require.DeepEqual(t, info.State.Msgs, uint64(1))
	stored, err := stream.GetMsg(ctx, 1)
	require.NoError(t, err)
	require.DeepEqual(t, stored.Header.Get("Nats-Msg-Id"), "cmds.HUB.1")
	require.DeepEqual(t, stored.Header.Get("Nats-Expected-Stream"), "")
	require.DeepEqual(t, stored.Header.Get("X-Op"), "open")

	big := downlink.Msg{Subject: "cmd.big", Data: []byte(strings.Repeat("x", 200)), Stream: "HUB", Seq: 2, ID: "HUB.2"}
	if err := d.Deliver(ctx, big); err == nil || !strings.Contains(err.Error(), "local stream refused it") {
		t.Fatalf("oversized command: %v", err)
	}

	// No stream captures these: a subscriber must take them.
	plain := downlink.Msg{Subject: "ops.restart", Data: []byte("now"), Stream: "HUB", Seq: 3, ID: "HUB.3"}
	if err := d.Deliver(ctx, plain); !errors.Is(err, errNoReceiver) {
		t.Fatalf("no subscriber: %v", err)
	}
	link := b.Connect("")
	leafs.add(link)
	_, err = link.Subscribe("ops.>", "", func(leaf.Msg) {})
	require.NoError(t, err)
	if err := d.Deliver(ctx, plain); !errors.Is(err, errNoReceiver) {
		t.Fatalf("only a link's subscription: %v", err)
	}
	sub, err := nc.SubscribeSync("ops.*")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	require.NoError(t, d.Deliver(ctx, plain))
	got, err := sub.NextMsg(5 * time.Second)
	require.NoError(t, err)
	require.DeepEqual(t, string(got.Data), "now")
}
