package app

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/leafbox/leafbox/leaf/node"
	"github.com/leafbox/leafbox/leaf/outbox"
)

// loopbackConfig parses src as a gateway config listening on 127.0.0.1 on
// free ports and fills its defaults from env.
func loopbackConfig(t testing.TB, src string, env Env) *Config {
	t.Helper()
	c := mustParse(t, src)
	Overrides{Host: ptr("127.0.0.1"), Port: ptr(-1)}.Apply(c)
	// Every listener the source leaves on its default port gets a free
	// one instead, so tests pass beside a leafbox running on its
	// defaults (4222, 8222, 7422).
	if c.HTTPPort == nil && c.HTTP.Port == nil {
		c.HTTPPort = ptr(-1)
	}
	if ln := c.LeafNodes; ln != nil && ln.Listen.Port == nil && ln.Listen.Host != "" {
		ln.Listen.Port = ptr(-1)
	}
	c.SetDefaults(env)
	return c
}

// gatewayConfig is loopbackConfig with a fresh state directory, validated.
func gatewayConfig(t testing.TB, src string) *Config {
	t.Helper()
	c := loopbackConfig(t, src, Env{StateDirectory: t.TempDir()})
	require.NoError(t, c.Validate())
	return c
}

// startConfig builds and starts an App from c and shuts it down in
// t.Cleanup (after an earlier Shutdown, harmlessly again).
func startConfig(t testing.TB, c *Config, flags Flags) *App {
	t.Helper()
	a, err := Build(c, flags)
	require.NoError(t, err)
	if err := a.Start(); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		if err := a.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return a
}

// startGateway starts a gateway App from src on loopback with free ports
// and its own state directory, and shuts it down in t.Cleanup.
func startGateway(t testing.TB, src string, flags Flags) *App {
	t.Helper()
	return startConfig(t, gatewayConfig(t, src), flags)
}

// linkConfig returns the configuration Build gives the link of remote i
// of the validated c, the leaf runtime's loop-prevention denies included.
func linkConfig(t testing.TB, c *Config, i int) leaf.Config {
	t.Helper()
	nc, err := nodeConfig(c, "", "", nil)
	require.NoError(t, err)
	n, err := node.New(nc, nil, nil)
	require.NoError(t, err)
	return n.LinkConfig(i)
}

// startJSHub starts a real nats-server hub with opts plus JetStream (in
// domain, unless it is ""), and creates the stream cfg on it. It returns
// the hub, a JetStream context on a client connection of the hub (closed
// in t.Cleanup) and the stream.
func startJSHub(t *testing.T, ctx context.Context, opts leaftest.HubOptions, domain string, cfg jetstream.StreamConfig) (*leaftest.Hub, jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	js := fmt.Sprintf("jetstream { store_dir: %q", t.TempDir())
	if domain != "" {
		js += ", domain: " + domain
	}
	opts.Config = js + " }\n" + opts.Config
	hub := leaftest.StartHub(t, opts)
	hjs, err := jetstream.New(natsConnect(t, hub.ClientURL()))
	require.NoError(t, err)
	stream, err := hjs.CreateStream(ctx, batchedHub(cfg))
	require.NoError(t, err)
	return hub, hjs, stream
}

// batchedHub returns cfg with allow_batched when LEAFBOX_TEST_HUB_BATCHED
// is set, so that the uplink tests run once per forwarding mode: fast
// batches, and per-message publishes (the default, a stream without it).
func batchedHub(cfg jetstream.StreamConfig) jetstream.StreamConfig {
	if os.Getenv("LEAFBOX_TEST_HUB_BATCHED") != "" {
		cfg.AllowBatchPublish = true
	}
	return cfg
}

// hubJetStream connects a client to hub (closed in t.Cleanup) and returns
// its JetStream context and the stream name.
func hubJetStream(t *testing.T, ctx context.Context, hub *leaftest.Hub, name string) (jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	hjs, err := jetstream.New(natsConnect(t, hub.ClientURL()))
	require.NoError(t, err)
	stream, err := hjs.Stream(ctx, name)
	require.NoError(t, err)
	return hjs, stream
}

// awaitCond polls cond every 20 ms until it holds, failing the test with
// cond's description of the state when ctx ends. It is for what signals
// no change: the state of a nats-server hub (another process, asked over
// the network), or a condition over several subsystems at once; a
// condition on one uplink, downlink or link waits on it instead
// (awaitUplink, awaitDownlink, awaitLink).
func awaitCond(t testing.TB, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, state := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s: %s", what, state)
		case <-tick.C:
		}
	}
}

// awaitUplinkAcked waits until the first uplink of a has an empty
// backlog and want messages acked, and returns its status then.
func awaitUplinkAcked(t testing.TB, ctx context.Context, a *App, want uint64) node.UplinkStatus {
	t.Helper()
	var drained outbox.Status
	if err := a.node.WaitUplink(ctx, 0, func(st outbox.Status) bool {
		drained = st
		return st.Acked == want && st.BacklogMsgs == 0
	}); err != nil {
		t.Fatalf("timed out waiting until the outbox drains with %d acked: %v; uplink %+v", want, err, a.UplinkStatus()[0])
	}
	st := a.UplinkStatus()[0]
	st.Status = drained // the counters as they were when the condition held
	return st
}

// awaitStreamMsgs waits until stream holds want messages, failing the
// test if it ever holds more; state describes the gateway for the failure
// message.
func awaitStreamMsgs(t testing.TB, ctx context.Context, stream jetstream.Stream, want uint64, state func() string) {
	t.Helper()
	awaitCond(t, ctx, fmt.Sprintf("the hub stream %s holds %d messages", stream.CachedInfo().Config.Name, want), func() (bool, string) {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		info, err := stream.Info(actx)
		if err != nil {
			return false, err.Error()
		}
		if info.State.Msgs > want {
			t.Fatalf("hub stream %s holds %d messages, want %d", info.Config.Name, info.State.Msgs, want)
		}
		return info.State.Msgs == want, fmt.Sprintf("hub holds %d; %s", info.State.Msgs, state())
	})
}

// awaitUplink waits until cond holds for the first uplink's outbox
// status, woken by the outbox at each change (node.WaitUplink), failing
// the test with what when ctx ends.
func awaitUplink(t testing.TB, ctx context.Context, a *App, what string, cond func(outbox.Status) bool) {
	t.Helper()
	if err := a.node.WaitUplink(ctx, 0, cond); err != nil {
		t.Fatalf("timed out waiting until %s: %v; uplink %+v", what, err, a.UplinkStatus()[0])
	}
}

// awaitDownlink waits until cond holds for the status of the downlink
// named name, woken by the downlink at each change (node.WaitDownlink),
// failing the test with what when ctx ends.
func awaitDownlink(t testing.TB, ctx context.Context, a *App, name, what string, cond func(downlink.Status) bool) {
	t.Helper()
	for i, st := range a.DownlinkStatus() {
		if st.Name != name {
			continue
		}
		if err := a.node.WaitDownlink(ctx, i, cond); err != nil {
			t.Fatalf("timed out waiting until %s: %v; downlink %+v", what, err, a.DownlinkStatus()[i])
		}
		return
	}
	t.Fatalf("no downlink %q", name)
}
