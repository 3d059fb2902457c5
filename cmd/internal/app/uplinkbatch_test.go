package app

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/leafbox/leafbox/leaf/outbox"
)

// startBatchGateway starts a hub whose stream SITE allows fast batches
// when batched, and a gateway whose uplink tel forwards telemetry.> to it
// through a proxy.
func startBatchGateway(t *testing.T, ctx context.Context, batched bool) (*App, *leaftest.Hub, *leaftest.Proxy) {
	t.Helper()
	hub, hjs, _ := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-batch"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}, Storage: jetstream.FileStorage,
			Duplicates: 10 * time.Minute, AllowBatchPublish: batched})
	hjs.Conn().Close()
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", hub.LeafPort))
	c := gatewayConfig(t, "server_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+proxy.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE}]\n")
	return startConfig(t, c, Flags{}), hub, proxy
}

// publishRange publishes telemetry messages from..to-1 to the gateway in
// bursts of 100, each burst durable (a PONG) before the next.
func publishRange(t *testing.T, a *App, from, to int) {
	t.Helper()
	gw := natsConnect(t, "nats://"+a.Addr().String())
	defer gw.Close()
	for i := from; i < to; i++ {
		require.NoError(t, gw.Publish("telemetry.t"+strconv.Itoa(i%5), []byte(strconv.Itoa(i))))
		if (i+1)%100 == 0 {
			require.NoError(t, gw.Flush())
		}
	}
	require.NoError(t, gw.Flush())
}

// checkHubOrder reads the hub stream and requires messages 0..n-1 in
// order, each once.
func checkHubOrder(t *testing.T, ctx context.Context, stream jetstream.Stream, n int) {
	t.Helper()
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	for got := 0; got < n; {
		batch, err := cons.Fetch(min(500, n-got), jetstream.FetchMaxWait(testTimeout))
		require.NoError(t, err)
		for m := range batch.Messages() {
			if string(m.Data()) != strconv.Itoa(got) {
				t.Fatalf("hub stream message %d is %q, want %d", got, m.Data(), got)
			}
			got++
		}
		if err := batch.Error(); err != nil && got < n {
			t.Fatalf("fetch after %d of %d: %v", got, n, err)
		}
	}
}

// TestUplinkBatchForward forwards through a hub stream with allow_batched:
// the uplink sends fast batches (Status.Mode), and across a link cut in
// the middle of the traffic and a hub kill -9 and restart the hub stream
// holds every message exactly once, in order. Fewer bytes cross the link
// than with a PubAck per message.
func TestUplinkBatchForward(t *testing.T) {
	const n = 3000
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	a, hub, proxy := startBatchGateway(t, ctx, true)
	awaitUplink(t, ctx, a, "the link is up", func(outbox.Status) bool {
		return a.UplinkStatus()[0].LinkState == leaf.StateConnected.String()
	})

	publishRange(t, a, 0, n/3)
	awaitUplinkAcked(t, ctx, a, n/3)
	if st := a.UplinkStatus()[0]; st.Mode != outbox.ModeBatch {
		t.Fatalf("uplink mode %q, want %q: %+v", st.Mode, outbox.ModeBatch, st.Status)
	}
	up, down := proxy.Bytes()
	t.Logf("%d messages: %.1f B per message toward the hub, %.1f B back", n/3, float64(up)/float64(n/3), float64(down)/float64(n/3))
	if per := float64(down) / float64(n/3); per > 20 {
		t.Errorf("%.1f B per message came back from the hub, want flow acks only (a PubAck each is ~80 B)", per)
	}

	// A cut while the second third is in flight.
	done := make(chan struct{})
	go func() { defer close(done); publishRange(t, a, n/3, 2*n/3) }()
	acked := a.UplinkStatus()[0].Acked
	awaitUplink(t, ctx, a, "the uplink forwards the second third", func(st outbox.Status) bool { return st.Acked > acked })
	proxy.Cut()
	proxy.Restore()
	<-done
	awaitUplinkAcked(t, ctx, a, 2*n/3)

	// The hub killed and restarted while the last third is captured.
	hub.Kill()
	publishRange(t, a, 2*n/3, n)
	hub.Restart()
	st := awaitUplinkAcked(t, ctx, a, n)
	_, stream := hubJetStream(t, ctx, hub, "SITE")
	awaitStreamMsgs(t, ctx, stream, n, func() string { return fmt.Sprintf("uplink %+v", a.UplinkStatus()[0]) })
	checkHubOrder(t, ctx, stream, n)
	if st.Mode != outbox.ModeBatch || len(st.Dropped) != 0 || st.WrongStream != 0 {
		t.Fatalf("uplink after the faults: %+v", st.Status)
	}
}

// TestUplinkBatchFallback forwards to a hub stream without allow_batched:
// the hub refuses the first batch and the uplink goes on with a PubAck per
// message, every message once and in order.
func TestUplinkBatchFallback(t *testing.T) {
	const n = 500
	t.Setenv("LEAFBOX_TEST_HUB_BATCHED", "") // a stream without allow_batched whatever the run
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	a, hub, _ := startBatchGateway(t, ctx, false)
	publishRange(t, a, 0, n)
	st := awaitUplinkAcked(t, ctx, a, n)
	_, stream := hubJetStream(t, ctx, hub, "SITE")
	awaitStreamMsgs(t, ctx, stream, n, func() string { return fmt.Sprintf("uplink %+v", a.UplinkStatus()[0]) })
	checkHubOrder(t, ctx, stream, n)
	if st.Mode != outbox.ModePerMessage || len(st.Dropped) != 0 || st.Refusals != 0 || st.DeadLettered != 0 {
		t.Fatalf("uplink toward a stream without allow_batched: %+v", st.Status)
	}
}
