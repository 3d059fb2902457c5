package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/identity"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/leafbox/leafbox/store/vfs"
)

// TestGatewayIdentity: without server_name, the first start generates
// the gateway's identity in <store dir>/state/identity.nk (0600), derives
// the server name from it and shows the key in /varz; a restart on the
// same store directory is the same gateway.
func TestGatewayIdentity(t *testing.T) {
	dir := t.TempDir()
	src := "http_port: -1\njetstream: {enabled: true}\nleafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"
	start := func() (*App, monitor.Varz) {
		t.Helper()
		c := loopbackConfig(t, src, Env{StateDirectory: dir})
		a := startConfig(t, c, Flags{})
		var v monitor.Varz
		getJSON(t, "http://"+a.MonitorAddr().String()+"/varz", &v)
		return a, v
	}
	a, v := start()
	path := filepath.Join(dir, "state", "identity.nk")
	id, err := identity.Load(vfs.OS, path)
	require.NoError(t, err)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.DeepEqual(t, fi.Mode().Perm(), os.FileMode(0o600))
	if v.PublicKey != id.PublicKey() || v.Name != id.ServerName() || !strings.HasPrefix(v.Name, "lb-") || v.ID == v.Name {
		t.Fatalf("/varz server_name %q public_key %q server_id %q, want %q %q", v.Name, v.PublicKey, v.ID, id.ServerName(), id.PublicKey())
	}
	require.NoError(t, a.Shutdown(context.Background()))

	a, again := start()
	if again.Name != v.Name || again.PublicKey != v.PublicKey {
		t.Fatalf("after a restart /varz server_name %q public_key %q, want %q %q", again.Name, again.PublicKey, v.Name, v.PublicKey)
	}
	// A reload keeps the derived name the links announce.
	require.NoError(t, a.Reload(loopbackConfig(t, src, Env{StateDirectory: dir})))
	require.DeepEqual(t, a.srv.Name(), v.Name)
	if again.ID == v.ID {
		t.Fatalf("server_id %q did not change across restarts; it is the per-start id", v.ID)
	}

	// A configured server_name wins; the identity is still shown.
	named := loopbackConfig(t, src+"server_name: gw7\n", Env{StateDirectory: dir})
	require.NoError(t, named.Validate())
	got, err := named.ApplyIdentity(true)
	require.NoError(t, err)
	require.DeepEqual(t, named.ServerName, "gw7")
	require.DeepEqual(t, got.PublicKey(), id.PublicKey())
}

// TestBuildRefusesADamagedIdentity: a damaged identity file stops the
// start with an error naming it, and is not replaced.
func TestBuildRefusesADamagedIdentity(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state", "identity.nk")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o750))
	require.NoError(t, os.WriteFile(path, []byte("not a seed\n"), 0o600))
	c := loopbackConfig(t, "jetstream: {enabled: true}\n", Env{StateDirectory: dir})
	_, err := Build(c, Flags{})
	require.ErrorContains(t, err, path, "not an NKey seed")
	b, _ := os.ReadFile(path)
	require.DeepEqual(t, string(b), "not a seed\n")
}

// outboxGateway is a gateway App with server_name gw1 whose uplink "tel"
// forwards telemetry.> to the hub stream SITE, with its state in dir.
type outboxGateway struct {
	t    *testing.T
	ctx  context.Context
	dir  string
	src  string
	a    *App
	next int // the next payload
}

func newOutboxGateway(t *testing.T, ctx context.Context, hub *leaftest.Hub) *outboxGateway {
	return &outboxGateway{t: t, ctx: ctx, dir: t.TempDir(), src: "http_port: 0\nserver_name: gw1\n" +
		"leafnodes: {remotes: [{url: '" + hub.LeafURL() + "'}]}\n" +
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE}]\n"}
}

func (g *outboxGateway) outboxDir() string { return filepath.Join(g.dir, "outbox") }

func (g *outboxGateway) start() {
	g.t.Helper()
	c := loopbackConfig(g.t, g.src, Env{StateDirectory: g.dir})
	require.NoError(g.t, c.Validate())
	g.a = startConfig(g.t, c, Flags{})
}

func (g *outboxGateway) stop() {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(g.ctx, testTimeout)
	defer cancel()
	require.NoError(g.t, g.a.Shutdown(ctx))
}

// publish publishes n messages whose payloads count on from the last.
func (g *outboxGateway) publish(n int) {
	g.t.Helper()
	nc := natsConnect(g.t, "nats://"+g.a.Addr().String())
	defer nc.Close()
	for range n {
		require.NoError(g.t, nc.Publish("telemetry.t", []byte(strconv.Itoa(g.next))))
		g.next++
	}
	require.NoError(g.t, nc.Flush()) // PONG: every message is in the outbox
}

// drained waits until the outbox is empty with acked acknowledged.
func (g *outboxGateway) drained(acked uint64) {
	g.t.Helper()
	awaitUplinkAcked(g.t, g.ctx, g.a, acked)
}

// hubHoldsEach checks that the hub stream holds exactly the payloads 0 to
// want-1, each once.
func hubHoldsEach(t *testing.T, ctx context.Context, stream jetstream.Stream, want int) {
	t.Helper()
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	count := map[string]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		require.NoError(t, err)
		count[string(m.Data)]++
	}
	var wrong []string
	for i := range want {
		if n := count[strconv.Itoa(i)]; n != 1 {
			wrong = append(wrong, fmt.Sprintf("%d×%d", i, n))
		}
		delete(count, strconv.Itoa(i))
	}
	for p, n := range count {
		wrong = append(wrong, fmt.Sprintf("unexpected %q×%d", p, n))
	}
	if len(wrong) > 0 || info.State.Msgs != uint64(want) {
		t.Fatalf("hub stream holds %d messages, want payloads 0 to %d once each; wrong (payload×count): %v",
			info.State.Msgs, want-1, wrong)
	}
}

// siteHub starts a hub whose stream SITE has a 10 minute duplicate
// window.
func siteHub(t *testing.T, ctx context.Context) (*leaftest.Hub, jetstream.Stream) {
	hub, _, stream := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-id"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}, Duplicates: 10 * time.Minute})
	return hub, stream
}

// TestUplinkOutboxWiped: the outbox is deleted between two runs (a
// re-imaged card, a new store directory). The three messages published
// after it must reach the hub stream; with ids made from the outbox
// sequence the hub's duplicate window dropped them while the gateway
// counted them acked.
func TestUplinkOutboxWiped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, stream := siteHub(t, ctx)
	g := newOutboxGateway(t, ctx, hub)
	g.start()
	g.publish(20)
	g.drained(20)
	hubHoldsEach(t, ctx, stream, 20)
	g.stop()

	require.NoError(t, os.RemoveAll(g.outboxDir()))
	g.start()
	g.publish(3)
	g.drained(3) // the hub acknowledged all three
	hubHoldsEach(t, ctx, stream, 23)
}

// TestUplinkOutboxRestoredFromOldCopy restores the outbox from copies
// taken earlier: one while five messages were still pending (the hub has
// stored them since), one after ten were acknowledged. After each restore
// the old pending messages are sent again and must be dropped by the
// hub's duplicate window, and the new ones must be stored: the hub stream
// ends with every message exactly once.
func TestUplinkOutboxRestoredFromOldCopy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*testTimeout)
	defer cancel()
	hub, _ := siteHub(t, ctx)
	g := newOutboxGateway(t, ctx, hub)
	backup := func(name string) string {
		t.Helper()
		dst := filepath.Join(t.TempDir(), name)
		require.NoError(t, os.CopyFS(dst, os.DirFS(g.outboxDir())))
		return dst
	}
	restore := func(src string) {
		t.Helper()
		require.NoError(t, os.RemoveAll(g.outboxDir()))
		require.NoError(t, os.CopyFS(g.outboxDir(), os.DirFS(src)))
	}

	// Five captured while the hub is down, then copied.
	hub.Kill()
	g.start()
	g.publish(5)
	g.stop()
	pending := backup("pending")

	hub.Restart()
	_, stream := hubJetStream(t, ctx, hub, "SITE")
	g.start()
	g.drained(5)
	g.publish(5)
	g.drained(10)
	g.stop()
	acked := backup("acked")
	g.start()
	g.publish(5)
	g.drained(5)
	g.stop()
	hubHoldsEach(t, ctx, stream, 15)

	restore(pending) // 0 to 4 again, then 15 to 17
	g.start()
	g.publish(3)
	g.drained(8)
	g.stop()
	hubHoldsEach(t, ctx, stream, 18)

	restore(acked) // nothing pending; its sequences go on from 10
	g.start()
	g.publish(3)
	g.drained(3)
	g.stop()
	hubHoldsEach(t, ctx, stream, 21)
}
