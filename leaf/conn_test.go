package leaf_test

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// Both sides of the protocol share one connection core; these tests show
// each of its behaviours on the solicited side (a Link toward a scripted
// hub) and on the accepting side (a Listener toward a scripted leaf).

// readUntilLine reads lines from r until one equals want, failing on EOF.
// It does not answer PINGs.
func readUntilLine(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	var got []string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("connection ended before %q: %v (got %q)", want, err, got)
		}
		line = strings.TrimRight(line, "\r\n")
		if line == want {
			return
		}
		got = append(got, line)
	}
}

// expectEOF reads r until the connection ends.
func expectEOF(t *testing.T, r *bufio.Reader) {
	t.Helper()
	for {
		if _, err := r.ReadString('\n'); err != nil {
			if strings.Contains(err.Error(), "timeout") {
				t.Fatalf("connection still open: %v", err)
			}
			return
		}
	}
}

// linkToFakeHub starts a gateway whose link dials a scripted hub with cfg
// changed by edit, and returns the hub's side after the handshake.
func linkToFakeHub(t *testing.T, edit func(*leaf.Config)) (*gateway, *leaftest.Conn) {
	t.Helper()
	fake := leaftest.StartFakeHub(t)
	cfg := testConfig(fake.URL())
	if edit != nil {
		edit(&cfg)
	}
	g := startGatewayNoWait(t, cfg)
	hub := fake.Accept()
	hub.Send(leaftest.HubInfo("n"))
	hub.ReadLine() // CONNECT
	hub.Send(leaftest.ConnectInfo)
	hub.Expect("LS+ $LDS.")
	g.waitFor(t, "registration", func(st leaf.Status) bool { return st.State == leaf.StateConnected })
	return g, hub
}

// expectLinkClosed waits until the link closes the hub's connection and
// reports err as the reason.
func expectLinkClosed(t *testing.T, g *gateway, hub *leaftest.Conn, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	hub.ExpectClosed(ctx)
	g.waitFor(t, "the error "+err.Error(), func(st leaf.Status) bool {
		return strings.Contains(st.LastError, err.Error())
	})
}

// TestStaleConnectionBothSides: after MaxPingsOut unanswered PINGs either
// side sends -ERR 'Stale Connection' and closes, as nats-server does for
// every connection kind.
func TestStaleConnectionBothSides(t *testing.T) {
	t.Run("solicited", func(t *testing.T) {
		g, hub := linkToFakeHub(t, func(c *leaf.Config) { c.PingInterval = 20 * time.Millisecond })
		for { // never answer a PING
			if line := hub.ReadLine(); line == "-ERR 'Stale Connection'" {
				break
			}
		}
		expectLinkClosed(t, g, hub, leaf.ErrStaleConnection)
	})
	t.Run("accepting", func(t *testing.T) {
		_, l := startListener(t, leaf.AcceptConfig{PingInterval: 20 * time.Millisecond, MaxPingsOut: 2})
		r := rawLeaf(t, l, `CONNECT {"name":"silent"}`+"\r\n")
		readUntilLine(t, r, "-ERR 'Stale Connection'")
		expectEOF(t, r)
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		require.NoError(t, l.Wait(ctx, func(ls []leaf.AcceptedStatus) bool { return len(ls) == 0 }))
	})
}

// TestProtocolErrorBothSides: an operation the parser refuses is answered
// with -ERR 'Unknown Protocol Operation' before the connection closes, on
// both sides (nats-server's parser does so for every connection kind).
func TestProtocolErrorBothSides(t *testing.T) {
	t.Run("solicited", func(t *testing.T) {
		g, hub := linkToFakeHub(t, nil)
		hub.Send("BOGUS\r\n")
		hub.Expect("-ERR 'Unknown Protocol Operation'")
		expectLinkClosed(t, g, hub, leaf.ErrProtocol)
	})
	t.Run("accepting", func(t *testing.T) {
		_, l := startListener(t, leaf.AcceptConfig{})
		r := rawLeaf(t, l, `CONNECT {"name":"garbled"}`+"\r\nBOGUS\r\n")
		readUntilLine(t, r, "-ERR 'Unknown Protocol Operation'")
		expectEOF(t, r)
	})
}

// TestPingPongBothSides: either side answers a PING with PONG, and each
// PONG to its own PING measures the RTT it reports.
func TestPingPongBothSides(t *testing.T) {
	t.Run("solicited", func(t *testing.T) {
		g, hub := linkToFakeHub(t, nil)
		hub.Send("PING\r\n")
		hub.Expect("PONG") // answering the link's registration PING on the way
		g.waitFor(t, "an RTT", func(st leaf.Status) bool { return st.RTT > 0 })
	})
	t.Run("accepting", func(t *testing.T) {
		_, l := startListener(t, leaf.AcceptConfig{})
		conn, r := rawLeafConn(t, l, `CONNECT {"name":"pinger"}`+"\r\nPING\r\n")
		readUntilLine(t, r, "PONG") // the listener's registration PING came before it
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		require.NoError(t, l.Wait(ctx, func(ls []leaf.AcceptedStatus) bool { return len(ls) == 1 }))
		if rtt := l.Leafs()[0].RTT; rtt != 0 {
			t.Fatalf("RTT %v before any PONG", rtt)
		}
		// Our PONG, then a PING: its PONG shows the PONG was processed.
		_, err := conn.Write([]byte("PONG\r\nPING\r\n"))
		require.NoError(t, err)
		readUntilLine(t, r, "PONG")
		if rtt := l.Leafs()[0].RTT; rtt <= 0 {
			t.Fatalf("RTT %v after the PONG", rtt)
		}
	})
}

// TestRTTThresholdsBothSides: with s2_auto, the level each side uses
// follows its measured RTT through its own configured thresholds. Below
// the loopback RTT they select s2_best, where nats-server's defaults
// (10ms, 50ms, 100ms) select s2_uncompressed.
func TestRTTThresholdsBothSides(t *testing.T) {
	tiny := []time.Duration{time.Nanosecond, 2 * time.Nanosecond, 3 * time.Nanosecond}
	_, l := startListener(t, leaf.AcceptConfig{Compression: leaf.CompressionS2Auto, RTTThresholds: tiny})
	cfg := testConfig("nats-leaf://" + l.Addr().String())
	cfg.Compression = leaf.CompressionS2Auto
	cfg.RTTThresholds = tiny
	g := startGateway(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, g.link.Flush(ctx))
	require.NoError(t, l.Flush(ctx))
	if st := g.link.Status(); st.Compression != leaf.CompressionS2Best || st.RTT <= 0 {
		t.Fatalf("link: compression %q, RTT %v; want s2_best and an RTT", st.Compression, st.RTT)
	}
	require.NoError(t, l.Wait(ctx, func(ls []leaf.AcceptedStatus) bool { return len(ls) == 1 }))
	if st := l.Leafs()[0]; st.Compression != leaf.CompressionS2Best || st.RTT <= 0 {
		t.Fatalf("listener: compression %q, RTT %v; want s2_best and an RTT", st.Compression, st.RTT)
	}
}

// TestWriteDeadlineSlowConsumerAccepting: a leaf that stops reading, with
// a pending limit too large to trip, is closed once a write misses
// WriteDeadline and counted as a slow consumer, as nats-server counts it
// (the solicited side: TestWriteDeadlineIsSlowConsumer).
func TestWriteDeadlineSlowConsumerAccepting(t *testing.T) {
	hubSrv, l := startListener(t, leaf.AcceptConfig{MaxPending: 1 << 30, WriteDeadline: 100 * time.Millisecond})
	published := floodStuckLeaf(t, hubSrv.Addr().String(), l, 200000)
	if n := l.SlowConsumers(); n != 1 {
		t.Fatalf("slow consumers %d after %d messages, want 1", n, published)
	}
}
