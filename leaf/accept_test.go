package leaf_test

import (
	"bufio"
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/leaf"
)

// hubLocal adapts *server.Server to leaf.AcceptLocal, as cmd/internal/app
// does: it reports which attached leaf made a subscription.
type hubLocal struct {
	srv    *server.Server
	byConn sync.Map // *server.Conn → *hubConn
}

type hubConn struct{ c *server.Conn }

func (h *hubLocal) Connect(account string, deliver func(leaf.Delivery)) (leaf.AcceptConn, error) {
	c := &hubConn{h.srv.InProcessCombined(account, func(m server.Msg, plain bool, queues []string) {
		deliver(leaf.Delivery{Msg: leafMsg(m), Plain: plain, Queues: queues})
	})}
	c.c.SetNoEcho()
	h.byConn.Store(c.c, c)
	return c, nil
}

func (c *hubConn) Subscribe(subj, queue string) (leaf.Subscription, error) {
	return c.c.Subscribe(subj, queue, nil)
}

func (c *hubConn) PublishQueues(route, shown, reply []byte, queues [][]byte, hdr, data []byte) {
	c.c.PublishQueues(string(route), string(shown), string(reply), queues, hdr, data)
}

func (c *hubConn) Close() { c.c.Close() }

func (h *hubLocal) WatchInterest(account string, fn func(leaf.AcceptInterest)) ([]leaf.AcceptInterest, func()) {
	conv := func(ev server.InterestEvent) leaf.AcceptInterest {
		out := leaf.AcceptInterest{Interest: leaf.Interest{Subject: ev.Subject, Queue: ev.Queue, Added: ev.Added}}
		if c, ok := h.byConn.Load(ev.Origin); ok && ev.Origin != nil {
			out.From = c.(*hubConn)
		}
		return out
	}
	existing, cancel := h.srv.WatchInterest(account, func(ev server.InterestEvent) { fn(conv(ev)) })
	out := make([]leaf.AcceptInterest, len(existing))
	for i, ev := range existing {
		out[i] = conv(ev)
	}
	return out, cancel
}

// startListener starts a broker with a leafnode listener on a free port.
func startListener(t *testing.T, cfg leaf.AcceptConfig) (*server.Server, *leaf.Listener) {
	t.Helper()
	srv := servertest.Start(t, server.Options{})
	cfg.Addr = "127.0.0.1:0"
	l, err := leaf.NewListener(cfg, &hubLocal{srv: srv}, nil)
	require.NoError(t, err)
	require.NoError(t, l.Start())
	t.Cleanup(func() { _ = l.Close() })
	return srv, l
}

// TestListenerWithLink attaches a Link to a Listener with NKey
// authentication: messages cross both ways, the listener lists the leaf,
// and closing the listener sends the link back to reconnecting.
func TestListenerWithLink(t *testing.T) {
	key := newUserKey(t)
	hubSrv, l := startListener(t, leaf.AcceptConfig{Auth: &auth.Config{Users: []auth.User{{Nkey: key.public}}}})
	cfg := testConfig("nats-leaf://" + l.Addr().String())
	cfg.NkeySeedFile = key.seedFile
	g := startGateway(t, cfg)

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, l.Wait(ctx, func(ls []leaf.AcceptedStatus) bool { return len(ls) == 1 }))
	if st := l.Leafs()[0]; st.Name != "gw-test" || st.Account != "$G" {
		t.Fatalf("listener status %+v", st)
	}

	hc := connect(t, "nats://"+hubSrv.Addr().String())
	gc := connect(t, g.clientURL())
	up, err := hc.SubscribeSync("up.>")
	require.NoError(t, err)
	down, err := gc.SubscribeSync("down.>")
	require.NoError(t, err)
	require.NoError(t, hc.Flush())
	g.flush(t, gc)
	require.NoError(t, l.Flush(ctx))
	require.NoError(t, gc.Publish("up.a", []byte("1")))
	require.NoError(t, hc.Publish("down.b", []byte("2")))
	if m := next(t, up); string(m.Data) != "1" {
		t.Fatalf("hub got %q", m.Data)
	}
	if m := next(t, down); string(m.Data) != "2" {
		t.Fatalf("gateway got %q", m.Data)
	}

	require.NoError(t, l.Close())
	g.waitFor(t, "the link to notice", func(st leaf.Status) bool { return st.State == leaf.StateConnecting })
	if len(l.Leafs()) != 0 {
		t.Fatalf("closed listener lists %+v", l.Leafs())
	}
}

// TestListenerRefusesUnknownNkey: a link signing with a key the listener
// does not know gets -ERR 'Authorization Violation'.
func TestListenerRefusesUnknownNkey(t *testing.T) {
	_, l := startListener(t, leaf.AcceptConfig{Auth: &auth.Config{Users: []auth.User{{Nkey: newUserKey(t).public}}}})
	cfg := testConfig("nats-leaf://" + l.Addr().String())
	cfg.NkeySeedFile = newUserKey(t).seedFile
	g := startGatewayNoWait(t, cfg)
	g.waitFor(t, "the refusal", func(st leaf.Status) bool { return st.LastError != "" })
	st := g.link.Status()
	if st.State == leaf.StateConnected || st.LastError != (&leaf.HubError{Text: "Authorization Violation"}).Error() {
		t.Fatalf("status %+v", st)
	}
}

// TestListenerSlowConsumer: a leaf that stops reading is closed once more
// than MaxPending bytes wait for it, as a slow client would be.
func TestListenerSlowConsumer(t *testing.T) {
	hubSrv, l := startListener(t, leaf.AcceptConfig{MaxPending: 64 << 10})
	published := floodStuckLeaf(t, hubSrv.Addr().String(), l, 100000)
	if n := l.SlowConsumers(); n != 1 {
		t.Fatalf("slow consumers %d after %d messages, want 1", n, published)
	}
}

// floodStuckLeaf attaches a raw leaf interested in "flood" that reads
// nothing after its CONNECT, publishes 1 KiB messages there through the
// broker at addr until the listener drops the leaf (at most limit), waits
// until it is gone, and returns how many it published.
func floodStuckLeaf(t *testing.T, addr string, l *leaf.Listener, limit int) int {
	t.Helper()
	rawLeaf(t, l, `CONNECT {"name":"stuck"}`+"\r\nLS+ flood\r\n")
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, l.Wait(ctx, func(ls []leaf.AcceptedStatus) bool {
		return len(ls) == 1 && len(ls[0].Subjects) == 1
	}))
	hc := connect(t, "nats://"+addr)
	payload := make([]byte, 1024)
	published := 0
	for len(l.Leafs()) == 1 && published < limit {
		require.NoError(t, hc.Publish("flood", payload))
		published++
		if published%1000 == 0 {
			require.NoError(t, hc.Flush())
		}
	}
	require.NoError(t, l.Wait(ctx, func(ls []leaf.AcceptedStatus) bool { return len(ls) == 0 }))
	return published
}

// rawLeaf dials the listener, reads its INFO and sends send (CONNECT and
// more); it returns the reader of what the listener sends next.
func rawLeaf(t *testing.T, l *leaf.Listener, send string) *bufio.Reader {
	t.Helper()
	_, r := rawLeafConn(t, l, send)
	return r
}

// rawLeafConn is rawLeaf that also returns the connection, to send more.
func rawLeafConn(t *testing.T, l *leaf.Listener, send string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", l.Addr().String(), wait)
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.SetDeadline(time.Now().Add(wait)))
	r := bufio.NewReader(conn)
	_, err = r.ReadString('\n') // INFO
	require.NoError(t, err)
	_, err = conn.Write([]byte(send))
	require.NoError(t, err)
	return conn, r
}

// TestListenerReplacesDuplicate: a second connection from the same server
// (name, account and remote account) replaces the first, which is told
// so, as nats-server does when a leaf reconnects before its old connection
// is noticed dead.
func TestListenerReplacesDuplicate(t *testing.T) {
	_, l := startListener(t, leaf.AcceptConfig{})
	const connect = `CONNECT {"name":"edge-1","remote_account":"$G"}` + "\r\n"
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	first := rawLeaf(t, l, connect)
	require.NoError(t, l.Wait(ctx, func(ls []leaf.AcceptedStatus) bool { return len(ls) == 1 }))
	id := l.Leafs()[0].ID
	rawLeaf(t, l, connect)
	require.NoError(t, l.Wait(ctx, func(ls []leaf.AcceptedStatus) bool { return len(ls) == 1 && ls[0].ID != id }))
	var lines []string
	for {
		line, err := first.ReadString('\n')
		if err != nil {
			break
		}
		lines = append(lines, strings.TrimSpace(line))
	}
	if !slices.Contains(lines, "-ERR 'Duplicate Remote LeafNode Connection'") {
		t.Fatalf("the replaced connection got %q", lines)
	}
}
