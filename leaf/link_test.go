package leaf_test

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// These tests run a real nats-server hub (leaftest.StartHub), a real
// leafbox server with a Link, and nats.go clients on both sides.

func TestPubSubBothWays(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	g := startGateway(t, testConfig(hub.LeafURL()))
	gw := connect(t, g.clientURL())
	hc := connect(t, hub.ClientURL())

	// Hub → gateway: a gateway subscriber's interest reaches the hub.
	down, err := gw.SubscribeSync("cmd.gw1.>")
	require.NoError(t, err)
	g.flush(t, gw)
	require.NoError(t, hc.Publish("cmd.gw1.reboot", []byte("now")))
	if m := next(t, down); m.Subject != "cmd.gw1.reboot" || string(m.Data) != "now" {
		t.Fatalf("gateway got %q %q", m.Subject, m.Data)
	}

	// Gateway → hub: a hub subscriber's interest reaches the gateway.
	up, err := hc.SubscribeSync("telemetry.*")
	require.NoError(t, err)
	g.flush(t, hc)
	require.NoError(t, gw.Publish("telemetry.temp", []byte(`{"c":21.5}`)))
	if m := next(t, up); m.Subject != "telemetry.temp" || string(m.Data) != `{"c":21.5}` {
		t.Fatalf("hub got %q %q", m.Subject, m.Data)
	}

	// Overlapping hub interest: one message still crosses once.
	up2, err := hc.SubscribeSync("telemetry.>")
	require.NoError(t, err)
	g.flush(t, hc)
	require.NoError(t, gw.Publish("telemetry.hum", []byte("40")))
	next(t, up)
	next(t, up2)
	g.flush(t, gw, hc)
	noMsg(t, up)
	noMsg(t, up2)

	// Messages from the hub are not echoed back to it.
	echo, err := hc.SubscribeSync("cmd.gw1.>")
	require.NoError(t, err)
	g.flush(t, hc)
	require.NoError(t, hc.Publish("cmd.gw1.ping", nil))
	next(t, echo)
	next(t, down)
	g.flush(t, gw, hc)
	noMsg(t, echo)

	st := g.link.Status()
	if st.State != leaf.StateConnected || st.ServerName != "hub" || st.RemoteAccount != "$G" ||
		st.InMsgs < 2 || st.OutMsgs < 2 || st.Subscriptions == 0 || st.RTT <= 0 {
		t.Fatalf("status %+v", st)
	}
}

func TestHeadersBothWays(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	g := startGateway(t, testConfig(hub.LeafURL()))
	gw := connect(t, g.clientURL())
	hc := connect(t, hub.ClientURL())

	down, _ := gw.SubscribeSync("h.down")
	up, _ := hc.SubscribeSync("h.up")
	g.flush(t, gw, hc)

	m := nats.NewMsg("h.down")
	m.Header.Set("Trace-Id", "abc")
	m.Data = []byte("body")
	require.NoError(t, hc.PublishMsg(m))
	if got := next(t, down); got.Header.Get("Trace-Id") != "abc" || string(got.Data) != "body" {
		t.Fatalf("gateway got %v %q", got.Header, got.Data)
	}
	m = nats.NewMsg("h.up")
	m.Header.Set("Nats-Msg-Id", "42")
	m.Data = []byte("payload")
	require.NoError(t, gw.PublishMsg(m))
	if got := next(t, up); got.Header.Get("Nats-Msg-Id") != "42" || string(got.Data) != "payload" {
		t.Fatalf("hub got %v %q", got.Header, got.Data)
	}
}

func TestRequestReplyBothWays(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	g := startGateway(t, testConfig(hub.LeafURL()))
	gw := connect(t, g.clientURL())
	hc := connect(t, hub.ClientURL())

	_, err := hc.Subscribe("svc.hub.time", func(m *nats.Msg) { _ = m.Respond([]byte("hub:" + string(m.Data))) })
	require.NoError(t, err)
	_, err = gw.Subscribe("svc.gw.status", func(m *nats.Msg) { _ = m.Respond([]byte("gw:" + string(m.Data))) })
	require.NoError(t, err)
	g.flush(t, gw, hc)

	for i := range 3 {
		r, err := gw.Request("svc.hub.time", fmt.Appendf(nil, "q%d", i), wait)
		require.NoError(t, err)
		if want := fmt.Sprintf("hub:q%d", i); string(r.Data) != want {
			t.Fatalf("gateway request got %q, want %q", r.Data, want)
		}
		r, err = hc.Request("svc.gw.status", fmt.Appendf(nil, "q%d", i), wait)
		require.NoError(t, err)
		if want := fmt.Sprintf("gw:q%d", i); string(r.Data) != want {
			t.Fatalf("hub request got %q, want %q", r.Data, want)
		}
	}
	// No responder on either side: nats.go's no-responders status.
	if _, err := gw.Request("svc.nobody", nil, wait); err != nats.ErrNoResponders {
		t.Fatalf("request without responders: %v", err)
	}
}

func TestQueueGroupsAcrossLink(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	g := startGateway(t, testConfig(hub.LeafURL()))
	gw := connect(t, g.clientURL())
	hc := connect(t, hub.ClientURL())
	const n = 200

	count := func(subs ...*nats.Subscription) (total int, each []int) {
		for _, s := range subs {
			k, _, _ := s.Pending()
			total += k
			each = append(each, k)
		}
		return total, each
	}
	// waitTotal flushes both clients and the link (g.flush: a PONG on
	// each follows every message sent before its PING), so every delivery
	// of what was published has arrived when it returns.
	waitTotal := func(what string, want int, subs ...*nats.Subscription) []int {
		t.Helper()
		g.flush(t, gw, hc)
		total, each := count(subs...)
		if total != want {
			t.Fatalf("%s: %d deliveries (%v), want %d", what, total, each, want)
		}
		return each
	}

	// Members only on the hub: gateway publishes reach exactly one of them.
	h1, _ := hc.QueueSubscribeSync("jobs.hub", "workers")
	h2, _ := hc.QueueSubscribeSync("jobs.hub", "workers")
	g.flush(t, hc)
	for range n {
		require.NoError(t, gw.Publish("jobs.hub", []byte("x")))
	}
	waitTotal("hub-only group", n, h1, h2)

	// Members only on the gateway: hub publishes reach exactly one.
	g1, _ := gw.QueueSubscribeSync("jobs.gw", "workers")
	g2, _ := gw.QueueSubscribeSync("jobs.gw", "workers")
	g.flush(t, gw)
	for range n {
		require.NoError(t, hc.Publish("jobs.gw", []byte("x")))
	}
	waitTotal("gateway-only group", n, g1, g2)

	// Members on both sides: each side serves its own publishers, and
	// every message is delivered exactly once.
	b1, _ := hc.QueueSubscribeSync("jobs.both", "workers")
	b2, _ := gw.QueueSubscribeSync("jobs.both", "workers")
	g.flush(t, gw, hc)
	for range n {
		require.NoError(t, gw.Publish("jobs.both", []byte("gw")))
		require.NoError(t, hc.Publish("jobs.both", []byte("hub")))
	}
	each := waitTotal("group on both sides", 2*n, b1, b2)
	if each[0] != n || each[1] != n {
		t.Fatalf("local members not preferred: hub member %d, gateway member %d", each[0], each[1])
	}
}

func TestInterestRemoval(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	g := startGateway(t, testConfig(hub.LeafURL()))
	gw := connect(t, g.clientURL())
	hc := connect(t, hub.ClientURL())

	// Gateway unsubscribes: the hub stops sending.
	down, _ := gw.SubscribeSync("alerts.>")
	g.flush(t, gw)
	require.NoError(t, hc.Publish("alerts.fire", nil))
	next(t, down)
	require.NoError(t, down.Unsubscribe())
	g.flush(t, gw, hc)
	before := g.link.Status().InMsgs
	for range 10 {
		require.NoError(t, hc.Publish("alerts.fire", nil))
	}
	g.flush(t, gw, hc)
	if after := g.link.Status().InMsgs; after != before {
		t.Fatalf("hub sent %d messages after the unsubscribe", after-before)
	}

	// Hub unsubscribes: the gateway stops sending.
	up, _ := hc.SubscribeSync("metrics.cpu")
	g.flush(t, hc)
	subs := g.link.Status().Subscriptions
	require.NoError(t, gw.Publish("metrics.cpu", nil))
	next(t, up)
	require.NoError(t, up.Unsubscribe())
	g.flush(t, gw, hc)
	st := g.link.Status()
	if st.Subscriptions != subs-1 {
		t.Fatalf("hub interest %d after unsubscribe, want %d", st.Subscriptions, subs-1)
	}
	for range 10 {
		require.NoError(t, gw.Publish("metrics.cpu", nil))
	}
	g.flush(t, gw, hc)
	if after := g.link.Status().OutMsgs; after != st.OutMsgs {
		t.Fatalf("gateway sent %d messages without hub interest", after-st.OutMsgs)
	}
}

func TestNkeyAuth(t *testing.T) {
	user := newUserKey(t)
	hub := leaftest.StartHub(t, leaftest.HubOptions{
		Leaf: fmt.Sprintf("authorization { nkey: %q }", user.public),
	})

	cfg := testConfig(hub.LeafURL())
	cfg.NkeySeedFile = user.seedFile
	g := startGateway(t, cfg)
	gw := connect(t, g.clientURL())
	hc := connect(t, hub.ClientURL())
	up, _ := hc.SubscribeSync("auth.ok")
	g.flush(t, hc)
	require.NoError(t, gw.Publish("auth.ok", nil))
	next(t, up)

	// The wrong key is refused; the link keeps retrying with backoff.
	wrong := newUserKey(t)
	cfg = testConfig(hub.LeafURL())
	cfg.NkeySeedFile = wrong.seedFile
	bad := startGatewayNoWait(t, cfg)
	bad.waitFor(t, "an authorization error", func(st leaf.Status) bool {
		return strings.Contains(st.LastError, "Authorization Violation") && !st.RetryAt.IsZero()
	})
	if st := bad.link.Status(); st.State != leaf.StateConnecting || st.Connects != 0 {
		t.Fatalf("wrong key: status %+v", st)
	}
}

func TestUserPasswordAuth(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{
		Leaf: `authorization { user: leaf, password: "s3cret" }`,
	})
	g := startGateway(t, testConfig(hub.LeafURLWithUser("leaf:s3cret")))
	if st := g.link.Status(); strings.Contains(st.URL, "s3cret") {
		t.Fatalf("status shows the password: %q", st.URL)
	}

	bad := startGatewayNoWait(t, testConfig(hub.LeafURLWithUser("leaf:wrong")))
	bad.waitFor(t, "an authorization error", func(st leaf.Status) bool {
		return strings.Contains(st.LastError, "Authorization Violation")
	})
}

func TestReconnectAfterHubRestart(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	g := startGateway(t, testConfig(hub.LeafURL()))
	gw := connect(t, g.clientURL())
	before, _ := gw.SubscribeSync("before.>")
	g.flush(t, gw)

	hub.Kill()
	g.waitFor(t, "the disconnect", func(st leaf.Status) bool { return st.State != leaf.StateConnected })
	// Made during the outage: takes effect on reconnect.
	during, _ := gw.SubscribeSync("during.>")
	require.NoError(t, gw.Flush())

	hub.Restart()
	g.waitFor(t, "the reconnect", func(st leaf.Status) bool {
		return st.State == leaf.StateConnected && st.Connects == 2
	})
	hc := connect(t, hub.ClientURL())
	up, _ := hc.SubscribeSync("after.>")
	g.flush(t, gw, hc)

	require.NoError(t, hc.Publish("before.1", []byte("b")))
	require.NoError(t, hc.Publish("during.1", []byte("d")))
	if m := next(t, before); string(m.Data) != "b" {
		t.Fatalf("before: %q", m.Data)
	}
	if m := next(t, during); string(m.Data) != "d" {
		t.Fatalf("during: %q", m.Data)
	}
	require.NoError(t, gw.Publish("after.1", []byte("a")))
	if m := next(t, up); string(m.Data) != "a" {
		t.Fatalf("after: %q", m.Data)
	}
}

func TestFailoverAcrossURLs(t *testing.T) {
	dead := leaftest.FreePort(t) // nothing listens there
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	g := startGateway(t, testConfig(fmt.Sprintf("nats-leaf://127.0.0.1:%d", dead), hub.LeafURL()))
	if st := g.link.Status(); !strings.HasSuffix(st.URL, fmt.Sprint(hub.LeafPort)) {
		t.Fatalf("connected to %q", st.URL)
	}
}

func TestWrongPort(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	g := startGatewayNoWait(t, testConfig(strings.Replace(hub.ClientURL(), "nats://", "nats-leaf://", 1)))
	g.waitFor(t, "the wrong-port error", func(st leaf.Status) bool {
		return strings.Contains(st.LastError, leaf.ErrWrongPort.Error())
	})
}

// telemetry is a typical JSON reading.
func telemetry(i int) []byte {
	return fmt.Appendf(nil, `{"device":"pump-%03d","site":"plant-north","ts":"2026-11-29T08:00:%02dZ",`+
		`"temperature_c":%d.5,"pressure_kpa":101.3,"vibration_mm_s":0.42,"status":"running","firmware":"1.4.2"}`,
		i%50, i%60, 20+i%7)
}

func TestCompressionReducesWireBytes(t *testing.T) {
	const n = 2000
	run := func(mode string) (written int64, st leaf.Status) {
		hub := leaftest.StartHub(t, leaftest.HubOptions{})
		var bytes atomic.Int64
		cfg := testConfig(hub.LeafURL())
		cfg.Compression = mode
		cfg.Dial = countingDial(&bytes)
		g := startGateway(t, cfg)
		gw := connect(t, g.clientURL())
		hc := connect(t, hub.ClientURL())
		sub, _ := hc.SubscribeSync("telemetry.>")
		g.flush(t, hc)
		start := bytes.Load()
		for i := range n {
			require.NoError(t, gw.Publish("telemetry.pump", telemetry(i)))
		}
		for i := range n {
			if m := next(t, sub); string(m.Data) != string(telemetry(i)) {
				t.Fatalf("%s: message %d corrupted: %q", mode, i, m.Data)
			}
		}
		return bytes.Load() - start, g.link.Status()
	}
	plain, st := run(leaf.CompressionOff)
	if st.Compression != leaf.CompressionOff {
		t.Fatalf("compression off negotiated as %q", st.Compression)
	}
	fast, st := run(leaf.CompressionS2Fast)
	if st.Compression != leaf.CompressionS2Fast {
		t.Fatalf("s2_fast negotiated as %q", st.Compression)
	}
	best, _ := run(leaf.CompressionS2Best)
	t.Logf("%d JSON messages: %d bytes plain, %d s2_fast (%.1f%%), %d s2_best (%.1f%%)",
		n, plain, fast, 100*float64(fast)/float64(plain), best, 100*float64(best)/float64(plain))
	if fast*2 > plain || best > fast {
		t.Fatalf("compression did not pay: plain %d, s2_fast %d, s2_best %d", plain, fast, best)
	}
}

func TestCompressionAutoOnLoopback(t *testing.T) {
	// s2_auto (the default on both sides) picks s2_uncompressed for an
	// RTT under the first threshold: S2 framing with uncompressed
	// chunks. The first threshold is raised from 10ms so that a loaded
	// machine's loopback RTT stays under it; autoLevel's thresholds are
	// tested on their own in compress_test.go.
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	auto := testConfig(hub.LeafURL())
	auto.RTTThresholds = []time.Duration{time.Minute, 2 * time.Minute, 3 * time.Minute}
	g := startGateway(t, auto)
	if st := g.link.Status(); st.Compression != leaf.CompressionS2Uncompressed {
		t.Fatalf("s2_auto on loopback negotiated %q", st.Compression)
	}
	// A hub that only accepts compression follows our level.
	hub2 := leaftest.StartHub(t, leaftest.HubOptions{Leaf: "compression: accept"})
	cfg := testConfig(hub2.LeafURL())
	cfg.Compression = leaf.CompressionS2Better
	g2 := startGateway(t, cfg)
	if st := g2.link.Status(); st.Compression != leaf.CompressionS2Better {
		t.Fatalf("against an accepting hub: %q", st.Compression)
	}
	// A hub with compression off: plain.
	hub3 := leaftest.StartHub(t, leaftest.HubOptions{Leaf: "compression: off"})
	g3 := startGateway(t, testConfig(hub3.LeafURL()))
	gw := connect(t, g3.clientURL())
	hc := connect(t, hub3.ClientURL())
	sub, _ := hc.SubscribeSync("x")
	g3.flush(t, hc)
	require.NoError(t, gw.Publish("x", []byte("plain")))
	next(t, sub)
	if st := g3.link.Status(); st.Compression != leaf.CompressionOff {
		t.Fatalf("against a hub with compression off: %q", st.Compression)
	}
}
