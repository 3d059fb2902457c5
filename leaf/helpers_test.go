package leaf_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/leaf"
)

// wait bounds every wait in these tests.
const wait = 10 * time.Second

// serverLocal adapts *server.Server to leaf.Local, as cmd/internal/app
// does: it remembers the connections it made so that their subscriptions
// are reported as Leaf.
type serverLocal struct {
	srv   *server.Server
	mu    sync.Mutex
	conns map[*server.Conn]bool
}

func newServerLocal(srv *server.Server) *serverLocal {
	return &serverLocal{srv: srv, conns: make(map[*server.Conn]bool)}
}

func (a *serverLocal) Connect(account string) (leaf.LocalConn, error) {
	c := a.srv.InProcess(account)
	c.SetNoEcho()
	a.mu.Lock()
	a.conns[c] = true
	a.mu.Unlock()
	return &localConn{a: a, c: c}, nil
}

func (a *serverLocal) isLeaf(c *server.Conn) bool {
	if c == nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conns[c]
}

func (a *serverLocal) WatchInterest(account string, fn func(leaf.Interest)) ([]leaf.Interest, func()) {
	conv := func(ev server.InterestEvent) leaf.Interest {
		return leaf.Interest{Subject: ev.Subject, Queue: ev.Queue, Added: ev.Added, Leaf: a.isLeaf(ev.Origin)}
	}
	existing, cancel := a.srv.WatchInterest(account, func(ev server.InterestEvent) { fn(conv(ev)) })
	out := make([]leaf.Interest, len(existing))
	for i, ev := range existing {
		out[i] = conv(ev)
	}
	return out, cancel
}

type localConn struct {
	a *serverLocal
	c *server.Conn
}

func (lc *localConn) Subscribe(subj string, h func(leaf.Msg)) (leaf.Subscription, error) {
	sub, err := lc.c.Subscribe(subj, "", func(m server.Msg) { h(leafMsg(m)) })
	if err != nil {
		return nil, err
	}
	return sub, nil
}

func (lc *localConn) Publish(route, shown, reply, hdr, data []byte) {
	lc.c.PublishBytes(route, shown, reply, hdr, data)
}

func (lc *localConn) Close() {
	lc.c.Close()
	lc.a.mu.Lock()
	delete(lc.a.conns, lc.c)
	lc.a.mu.Unlock()
}

// gateway is a leafbox server with a link to a hub.
type gateway struct {
	srv  *server.Server
	link *leaf.Link
}

// testConfig returns a link configuration for tests: fast reconnects.
func testConfig(urls ...string) leaf.Config {
	return leaf.Config{
		URLs:         urls,
		Name:         "gw-test",
		ReconnectMin: 20 * time.Millisecond,
		ReconnectMax: 200 * time.Millisecond,
	}
}

// startGateway starts a leafbox server and a link with cfg, and waits
// until the link is connected.
func startGateway(t *testing.T, cfg leaf.Config) *gateway {
	t.Helper()
	g := startGatewayNoWait(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := g.link.WaitConnected(ctx); err != nil {
		t.Fatalf("link not connected: %v (status %+v)", err, g.link.Status())
	}
	return g
}

// startGatewayNoWait is startGateway without waiting for the connection.
func startGatewayNoWait(t *testing.T, cfg leaf.Config) *gateway {
	t.Helper()
	srv := servertest.Start(t, server.Options{})
	link, err := leaf.New(cfg, newServerLocal(srv), nil)
	if err != nil {
		t.Fatalf("leaf.New: %v", err)
	}
	if err := link.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = link.Close() })
	return &gateway{srv: srv, link: link}
}

// clientURL is the gateway's client URL.
func (g *gateway) clientURL() string { return "nats://" + g.srv.Addr().String() }

// flush makes sure every interest change and message queued on either
// side of the link has been processed by the other side.
func (g *gateway) flush(t *testing.T, conns ...*nats.Conn) {
	t.Helper()
	for _, nc := range conns {
		if err := nc.FlushTimeout(wait); err != nil {
			t.Fatalf("nats flush: %v", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := g.link.Flush(ctx); err != nil {
		t.Fatalf("link flush: %v", err)
	}
	for _, nc := range conns {
		if err := nc.FlushTimeout(wait); err != nil {
			t.Fatalf("nats flush: %v", err)
		}
	}
}

// waitFor waits until cond holds for the link's status.
func (g *gateway) waitFor(t *testing.T, what string, cond func(leaf.Status) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := g.link.Wait(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v (status %+v)", what, err, g.link.Status())
	}
}

// connect opens a nats.go connection closed in t.Cleanup.
func connect(t *testing.T, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, append([]nats.Option{nats.Timeout(wait)}, opts...)...)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// next returns the next message of sub.
func next(t *testing.T, sub *nats.Subscription) *nats.Msg {
	t.Helper()
	m, err := sub.NextMsg(wait)
	if err != nil {
		t.Fatalf("next message on %s: %v", sub.Subject, err)
	}
	return m
}

// noMsg fails if sub holds a message.
func noMsg(t *testing.T, sub *nats.Subscription) {
	t.Helper()
	if n, _, _ := sub.Pending(); n != 0 {
		m, _ := sub.NextMsg(0)
		t.Fatalf("unexpected message on %s: %q", sub.Subject, m.Data)
	}
}

// countingConn counts the bytes written to the socket.
type countingConn struct {
	net.Conn
	written *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.written.Add(int64(n))
	return n, err
}

// countingDial returns a Dial function that counts written bytes.
func countingDial(written *atomic.Int64) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, written: written}, nil
	}
}

// userKey is a user NKey with its seed in a file.
type userKey struct {
	public   string
	seed     []byte
	seedFile string
}

func newUserKey(t *testing.T) userKey {
	t.Helper()
	kp, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	seed, err := kp.Seed()
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "user.nk")
	require.NoError(t, os.WriteFile(path, append(seed, '\n'), 0o600))
	return userKey{public: pub, seed: seed, seedFile: path}
}

// leafMsg is m as the leaf package sees it.
func leafMsg(m server.Msg) leaf.Msg {
	return leaf.Msg{Subject: m.Subject, Route: m.Route, Reply: m.Reply, Header: m.Header, Data: m.Data}
}
