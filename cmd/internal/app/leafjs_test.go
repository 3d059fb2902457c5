package app

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestLeafListenJetStreamDomains attaches a nats-server leaf with
// JetStream domain "edge2" to leafbox (domain "mid"). A leafbox client
// reaches the leaf's JetStream through the domain: it creates a stream
// there, publishes, and consumes with a push and a pull consumer whose
// acks reach the leaf (double acks are confirmed by it). The deliveries
// cross with the stored subject after '@' in the ack reply; the other way,
// a leaf client uses leafbox's JetStream through domain "mid" and its push
// consumer's messages arrive under the stored subject too.
func TestLeafListenJetStreamDomains(t *testing.T) {
	a := startApp(t, fmt.Sprintf("http_port: -1\nserver_name: mid\njetstream: {store_dir: %q, domain: mid}\n"+
		"leafnodes: {listen: '127.0.0.1:-1'}\n", t.TempDir()), Flags{})
	bottom := leaftest.StartHub(t, leaftest.HubOptions{Name: "edge2",
		Config: fmt.Sprintf("jetstream { store_dir: %q, domain: edge2 }\n", t.TempDir()),
		Leaf:   fmt.Sprintf(`remotes: [{url: "nats-leaf://%s"}]`, a.LeafListener().Addr())})
	waitLeafs(t, a, "the leaf's JetStream domain", hasLeafSubject("$JS.edge2.API.STREAM.>", true))
	ctx, cancel := context.WithTimeout(context.Background(), 3*testTimeout)
	defer cancel()

	gw := natsConnect(t, "nats://"+a.Addr().String())
	js, err := jetstream.NewWithDomain(gw, "edge2")
	require.NoError(t, err)
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "E2", Subjects: []string{"e2.>"}})
	require.NoError(t, err)
	if s.CachedInfo().Config.Name != "E2" {
		t.Fatalf("stream info %+v", s.CachedInfo())
	}
	const n = 10
	for i := range n {
		ack, err := js.Publish(ctx, fmt.Sprintf("e2.m%d", i), []byte(fmt.Sprint(i)))
		require.NoError(t, err)
		require.DeepEqual(t, ack.Domain, "edge2")
		require.DeepEqual(t, ack.Sequence, uint64(i+1))
	}

	// Push: the leaf's consumer delivers to a leafbox subscriber.
	push, err := js.CreateOrUpdatePushConsumer(ctx, "E2", jetstream.ConsumerConfig{Durable: "push",
		DeliverSubject: "dlv.push", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	got := make(chan error, n)
	cc, err := push.Consume(func(m jetstream.Msg) {
		md, err := m.Metadata()
		if err == nil && m.Subject() != fmt.Sprintf("e2.m%d", md.Sequence.Stream-1) {
			err = fmt.Errorf("push delivery %d under %q", md.Sequence.Stream, m.Subject())
		}
		if err == nil {
			err = m.DoubleAck(ctx)
		}
		got <- err
	})
	require.NoError(t, err)
	defer cc.Stop()
	for range n {
		select {
		case err := <-got:
			require.NoError(t, err)
		case <-ctx.Done():
			t.Fatal("push deliveries did not arrive")
		}
	}
	waitAcked(ctx, t, "push", n, func() (*jetstream.ConsumerInfo, error) {
		c, err := js.PushConsumer(ctx, "E2", "push")
		if err != nil {
			return nil, err
		}
		return c.CachedInfo(), nil
	})

	// Pull: fetch through the domain, ack each.
	pull, err := js.CreateOrUpdateConsumer(ctx, "E2", jetstream.ConsumerConfig{Durable: "pull",
		AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	seen := 0
	for seen < n {
		batch, err := pull.Fetch(n-seen, jetstream.FetchMaxWait(testTimeout))
		require.NoError(t, err)
		for m := range batch.Messages() {
			if m.Subject() != fmt.Sprintf("e2.m%d", seen) {
				t.Fatalf("pull delivery %d under %q", seen, m.Subject())
			}
			require.NoError(t, m.DoubleAck(ctx))
			seen++
		}
		require.NoError(t, batch.Error())
	}
	waitAcked(ctx, t, "pull", n, func() (*jetstream.ConsumerInfo, error) { return pull.Info(ctx) })

	// The other way: a leaf client uses leafbox's JetStream.
	nc := natsConnect(t, bottom.ClientURL())
	mjs, err := jetstream.NewWithDomain(nc, "mid")
	require.NoError(t, err)
	_, err = mjs.CreateStream(ctx, jetstream.StreamConfig{Name: "MID", Subjects: []string{"mid.>"}})
	require.NoError(t, err)
	for i := range 3 {
		_, err := mjs.Publish(ctx, fmt.Sprintf("mid.m%d", i), nil)
		require.NoError(t, err)
	}
	mpush, err := mjs.CreateOrUpdatePushConsumer(ctx, "MID", jetstream.ConsumerConfig{Durable: "p",
		DeliverSubject: "dlv.mid", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	subjects := make(chan string, 3)
	mcc, err := mpush.Consume(func(m jetstream.Msg) {
		_ = m.Ack()
		subjects <- m.Subject()
	})
	require.NoError(t, err)
	defer mcc.Stop()
	for i := range 3 {
		select {
		case s := <-subjects:
			require.DeepEqual(t, s, fmt.Sprintf("mid.m%d", i))
		case <-ctx.Done():
			t.Fatal("leafbox's push deliveries did not reach the leaf")
		}
	}
	if st := a.LeafListener().Leafs(); len(st) != 1 {
		t.Fatalf("the leaf was dropped: %+v", st)
	}
}

// waitAcked waits until consumer name, as info reports it, has every one
// of n messages acknowledged.
func waitAcked(ctx context.Context, t *testing.T, name string, n uint64, info func() (*jetstream.ConsumerInfo, error)) {
	t.Helper()
	awaitCond(t, ctx, fmt.Sprintf("consumer %s acked %d", name, n), func() (bool, string) {
		ci, err := info()
		require.NoError(t, err)
		return ci.AckFloor.Stream == n && ci.NumAckPending == 0,
			fmt.Sprintf("consumer %s: ack floor %d, %d pending; want %d acked", name, ci.AckFloor.Stream, ci.NumAckPending, n)
	})
}
