package leaf_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// These tests script the hub's side (leaftest.FakeHub) to show what a real
// hub cannot be made to do on demand, and to check the exact lines the
// link writes.

func TestConnectAndInterestLines(t *testing.T) {
	fake := leaftest.StartFakeHub(t)
	user := newUserKey(t)
	cfg := testConfig(fake.URL())
	cfg.Name = "gw-7"
	cfg.NkeySeedFile = user.seedFile
	cfg.DenyImports = []string{"private.>"}
	g := startGatewayNoWait(t, cfg)

	// Interest that exists before the link connects.
	gw := connect(t, g.clientURL())
	for _, s := range []struct{ subj, queue string }{
		{"a.b", ""}, {"a.b", ""}, {"q.x", "g"}, {"q.x", "g"}, {"$KV.bucket.>", ""}, {"private.x", ""},
	} {
		if s.queue == "" {
			_, _ = gw.SubscribeSync(s.subj)
		} else {
			_, _ = gw.QueueSubscribeSync(s.subj, s.queue)
		}
	}
	require.NoError(t, gw.Flush())

	hub := fake.Accept()
	hub.Send(leaftest.HubInfo("nonce-1"))
	line := hub.Expect("CONNECT ")
	var c map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "CONNECT ")), &c))
	for k, want := range map[string]any{
		"name": "gw-7", "remote_account": "$G", "headers": true, "compress_mode": "off",
		"nkey": user.public, "protocol": float64(1), "version": leaf.DefaultVersion,
	} {
		if c[k] != want {
			t.Errorf("CONNECT %s = %v, want %v", k, c[k], want)
		}
	}
	for _, k := range []string{"lang", "is_hub", "gateway", "cluster"} {
		if _, ok := c[k]; ok {
			t.Errorf("CONNECT has %q: %s", k, line)
		}
	}
	if fmt.Sprint(c["deny_pub"]) != "[private.>]" {
		t.Errorf("deny_pub = %v", c["deny_pub"])
	}
	sig, err := base64.RawURLEncoding.DecodeString(c["sig"].(string))
	require.NoError(t, err)
	pub, err := nkeys.FromPublicKey(user.public)
	require.NoError(t, err)
	if err := pub.Verify([]byte("nonce-1"), sig); err != nil {
		t.Fatalf("nonce signature: %v", err)
	}

	// After connect_info: the local interest, once per key, with queue
	// weights; never the JetStream deny set or deny_imports; then our
	// loop-detection subject.
	hub.Send(leaftest.ConnectInfo)
	want := []string{"LS+ a.b", "LS+ q.x g 2", "LS+ " + g.link.LoopSubject()}
	for _, w := range want {
		if got := hub.Expect("LS+ "); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
	g.waitFor(t, "registration", func(st leaf.Status) bool { return st.State == leaf.StateConnected })

	// Live changes: plain interest only at 0→1 and 1→0, queue interest on
	// every change of weight.
	s1, _ := gw.SubscribeSync("live")
	s2, _ := gw.SubscribeSync("live")
	q3, _ := gw.QueueSubscribeSync("q.x", "g")
	require.NoError(t, s1.Unsubscribe())
	require.NoError(t, s2.Unsubscribe())
	require.NoError(t, q3.Unsubscribe())
	require.NoError(t, gw.Flush())
	for _, w := range []string{"LS+ live", "LS+ q.x g 3", "LS- live", "LS+ q.x g 2"} {
		if got := hub.Expect("LS"); got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
}

func TestLoopDetected(t *testing.T) {
	fake := leaftest.StartFakeHub(t)
	g := startGatewayNoWait(t, testConfig(fake.URL()))
	hub := fake.Accept()
	hub.Handshake()
	lds := hub.Expect("LS+ $LDS.")
	// Our own loop-detection subject comes back: a loop.
	hub.Send(lds + "\r\n")
	want := `-ERR 'Loop detected for leafnode account="$G". Delaying attempt to reconnect for 30s'`
	if got := hub.Expect("-ERR"); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	hub.ExpectClosed(ctx)
	g.waitFor(t, "the loop delay", func(st leaf.Status) bool {
		return strings.Contains(st.LastError, "loop detected") && time.Until(st.RetryAt) > 25*time.Second
	})
}

func TestHubReportsLoop(t *testing.T) {
	fake := leaftest.StartFakeHub(t)
	g := startGatewayNoWait(t, testConfig(fake.URL()))
	hub := fake.Accept()
	hub.Handshake()
	hub.Expect("LS+ $LDS.")
	hub.Send("-ERR 'Loop detected for leafnode account=\"$G\". Delaying attempt to reconnect for 30s'\r\n")
	g.waitFor(t, "the loop delay", func(st leaf.Status) bool {
		return time.Until(st.RetryAt) > 25*time.Second
	})
}

func TestStaleConnection(t *testing.T) {
	fake := leaftest.StartFakeHub(t)
	cfg := testConfig(fake.URL())
	cfg.PingInterval = 20 * time.Millisecond
	g := startGatewayNoWait(t, cfg)
	hub := fake.Accept()
	hub.Send(leaftest.HubInfo("n"))
	hub.ReadLine() // CONNECT
	hub.Send(leaftest.ConnectInfo)
	// Never answer a PING.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	hub.ExpectClosed(ctx)
	g.waitFor(t, "the stale error", func(st leaf.Status) bool {
		return strings.Contains(st.LastError, leaf.ErrStaleConnection.Error())
	})
}

func TestOldHubWithoutConnectInfo(t *testing.T) {
	// A hub whose INFO lacks info_on_connect sends no connect_info INFO:
	// the link registers right after CONNECT, as nats-server's does.
	fake := leaftest.StartFakeHub(t)
	g := startGatewayNoWait(t, testConfig(fake.URL()))
	hub := fake.Accept()
	hub.Send(`INFO {"server_id":"OLD","headers":true,"client_id":3,"nonce":"n","leafnode_urls":["127.0.0.1:1"]}` + "\r\n")
	line := hub.Expect("CONNECT ")
	if !strings.Contains(line, `"compress_mode":"not supported"`) {
		t.Fatalf("CONNECT to a hub without compression: %s", line)
	}
	hub.Expect("LS+ $LDS.")
	g.waitFor(t, "registration", func(st leaf.Status) bool { return st.State == leaf.StateConnected })
}

func TestJetStreamDeliveryAcrossLink(t *testing.T) {
	// A hub push consumer delivering to a gateway subscriber: the LMSG
	// subject is the deliver subject, and the stream subject rides after
	// '@' in the ack reply. The subscriber sees the stream subject and the
	// plain ack reply.
	fake := leaftest.StartFakeHub(t)
	g := startGatewayNoWait(t, testConfig(fake.URL()))
	gw := connect(t, g.clientURL())
	sub, _ := gw.SubscribeSync("deliver.x")
	require.NoError(t, gw.Flush())
	hub := fake.Accept()
	hub.Handshake()
	hub.Expect("LS+ deliver.x")
	ack := "$JS.ACK.ORDERS.c1.1.5.5.1700000000.0"
	hub.Send("LMSG deliver.x " + ack + "@orders.eu.1 5\r\nhello\r\n")
	m := next(t, sub)
	if m.Subject != "orders.eu.1" || m.Reply != ack || string(m.Data) != "hello" {
		t.Fatalf("got subject %q reply %q data %q", m.Subject, m.Reply, m.Data)
	}
}

func TestJetStreamDeliveryToHub(t *testing.T) {
	// The other direction: a local JetStream push delivery (routed to the
	// deliver subject, shown under the stream subject) toward a deliver
	// subject the hub subscribed to goes out as nats-server sends it: LMSG
	// subject = deliver subject, reply = ack reply + '@' + stream subject.
	// Messages routed and shown alike, and deliveries without a reply,
	// go out unchanged; a reply already carrying '@' is not extended.
	fake := leaftest.StartFakeHub(t)
	g := startGatewayNoWait(t, testConfig(fake.URL()))
	hub := fake.Accept()
	hub.Handshake()
	hub.Expect("LS+ $LDS.")
	g.waitFor(t, "registration", func(st leaf.Status) bool { return st.State == leaf.StateConnected })
	hub.Send("LS+ $JS.S.abc\r\nPING\r\n")
	hub.Expect("PONG")
	js := g.srv.InProcess("")
	ack := "$JS.ACK.X.JS_SRC_1.1.7.7.1700000000.3"
	js.PublishAs("$JS.S.abc", "x.1", ack, nil, []byte("hello"))
	js.PublishAs("$JS.S.abc", "$JS.S.abc", "$JS.FC.X.c.1", nil, []byte("fc"))
	js.PublishAs("$JS.S.abc", "x.2", "", nil, []byte("hb"))
	js.PublishAs("$JS.S.abc", "x.3", ack+"@x.3", nil, []byte("again"))
	for _, want := range []string{
		"LMSG $JS.S.abc " + ack + "@x.1 5", "LMSG $JS.S.abc $JS.FC.X.c.1 2",
		"LMSG $JS.S.abc 2", "LMSG $JS.S.abc " + ack + "@x.3 5",
	} {
		if got := hub.Expect("LMSG"); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
		hub.ReadLine() // the payload
	}
}

func TestDeniedTrafficNeverCrosses(t *testing.T) {
	// The hub closes a link that sends a literal LS+ or any LMSG on the
	// JetStream deny set; deny_exports and deny_imports are filtered too.
	fake := leaftest.StartFakeHub(t)
	cfg := testConfig(fake.URL())
	cfg.DenyExports = []string{"secret.>"}
	cfg.DenyImports = []string{"noisy.>"}
	g := startGatewayNoWait(t, cfg)
	gw := connect(t, g.clientURL())
	noisy, _ := gw.SubscribeSync(">")
	require.NoError(t, gw.Flush())
	hub := fake.Accept()
	hub.Handshake()
	hub.Expect("LS+ >")
	hub.Expect("LS+ $LDS.")
	g.waitFor(t, "registration", func(st leaf.Status) bool { return st.State == leaf.StateConnected })
	hub.Send("LS+ >\r\nLS+ $KV.b.k\r\nPING\r\n")
	hub.Expect("PONG")
	pub := connect(t, g.clientURL())
	for _, subj := range []string{"$KV.b.k", "$JS.API.INFO", "secret.x", "ok.1"} {
		require.NoError(t, pub.Publish(subj, []byte(subj)))
	}
	require.NoError(t, pub.Flush())
	for range 4 {
		next(t, noisy) // the local subscriber gets all four
	}
	if got := hub.Expect("LMSG"); got != "LMSG ok.1 4" {
		t.Fatalf("first message sent: %q", got)
	}
	// Denied imports from the hub are dropped locally.
	hub.Send("LMSG noisy.1 1\r\nx\r\nLMSG fine.1 1\r\ny\r\n")
	if m := next(t, noisy); m.Subject != "fine.1" {
		t.Fatalf("delivered %q", m.Subject)
	}
}

// TestPublishRefusals: Link.Publish refuses a message above the hub's
// max_payload (the hub would close the link on it), and, after the hub
// answered a publish with a permissions violation -ERR, that subject
// (which nats-server also closes the link for), but not others.
func TestPublishRefusals(t *testing.T) {
	fake := leaftest.StartFakeHub(t)
	g := startGatewayNoWait(t, testConfig(fake.URL()))
	hub := fake.Accept()
	hub.Handshake()
	hub.Expect("LS+ $LDS.")
	hub.Send("LS+ up.>\r\nPING\r\n")
	hub.Expect("PONG")
	g.waitFor(t, "connected", func(st leaf.Status) bool { return st.State == leaf.StateConnected })

	big := make([]byte, 1048577) // the fake hub's max_payload is 1048576
	if err := g.link.Publish("up.big", "", nil, big); !errors.Is(err, leaf.ErrMaxPayload) {
		t.Fatalf("Publish above max_payload: %v, want ErrMaxPayload", err)
	}
	require.NoError(t, g.link.Publish("up.denied", "", nil, []byte("x")))
	hub.Expect("LMSG up.denied")
	hub.Expect("x")
	hub.Send("-ERR 'Permissions Violation for Publish to \"up.denied\"'\r\n")
	g.waitFor(t, "the -ERR", func(st leaf.Status) bool { return strings.Contains(st.LastError, "Permissions Violation") })
	if err := g.link.Publish("up.denied", "", nil, []byte("x")); !errors.Is(err, leaf.ErrNotPermitted) {
		t.Fatalf("Publish after the violation: %v, want ErrNotPermitted", err)
	}
	require.NoError(t, g.link.Publish("up.ok", "", nil, []byte("x")))
	hub.Expect("LMSG up.ok")
}
