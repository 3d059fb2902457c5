//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// The command blocks of docs/operations.md marked "<!-- tested: NAME -->",
// run as written: only the paths given to runGuideBlock are substituted,
// and a "systemctl VERB leafbox" line calls the test's stand-in for the
// service manager.

// guidePath is the operations guide, seen from this package.
var guidePath = filepath.Join("..", "..", "docs", "operations.md")

// repoRoot is the repository root, where the guide's commands run.
var repoRoot = filepath.Join("..", "..")

// guideBlock returns the text of the sh or yaml block that follows the
// marker "<!-- tested: name -->" in the guide, without the indentation
// of the list item it may be in.
func guideBlock(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(guidePath)
	require.NoError(t, err)
	re := regexp.MustCompile("(?s)<!-- tested: " + regexp.QuoteMeta(name) + " -->\\s*```(?:sh|yaml)\n(.*?)\n\\s*```")
	m := re.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no sh or yaml block marked tested: %s", guidePath, name)
	}
	// The block's indentation is that of its first line (a block inside a
	// list item is indented with the item).
	lines := strings.Split(string(m[1]), "\n")
	indent := lines[0][:len(lines[0])-len(strings.TrimLeft(lines[0], " "))]
	for i, l := range lines {
		lines[i] = strings.TrimPrefix(l, indent)
	}
	return strings.Join(lines, "\n")
}

// runGuideBlock runs the guide's block name line by line after replacing
// the pairs (old, new, ...; each old must occur in the block). A line
// "systemctl VERB leafbox" calls service(VERB); every other line runs in
// bash from the repository root, with the pinned tools on PATH.
func runGuideBlock(t *testing.T, name string, service func(verb string), pairs ...string) {
	t.Helper()
	block := substitute(t, guidePath+" block "+name, guideBlock(t, name), pairs...)
	tools := filepath.Dir(leaftest.Binary(t))
	home := t.TempDir()
	for _, line := range strings.Split(block, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if f := strings.Fields(line); len(f) == 3 && f[0] == "systemctl" && f[2] == "leafbox" {
			service(f[1])
			continue
		}
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", line)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(),
			"PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"),
			"HOME="+home, "XDG_CONFIG_HOME=", "XDG_DATA_HOME=", "NATS_CONTEXT=")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("guide block %s: %s: %v\n%s", name, line, err, out)
		}
	}
}

// opsGateway is one box of the guide's story: a leafbox on its own store
// directory with the uplink "tel" to the hub stream SITE.
type opsGateway struct {
	t     *testing.T
	store string // its /var/lib/leafbox
	cfg   string
	p     *proc
	nc    *nats.Conn
	mon   string
}

// newOpsGateway writes the configuration of a box whose store is
// dir/var/lib/leafbox; every box has the same server_name, as a
// replacement must.
func newOpsGateway(t *testing.T, dir, leafURL string) *opsGateway {
	t.Helper()
	g := &opsGateway{t: t, store: filepath.Join(dir, "var", "lib", "leafbox"), cfg: filepath.Join(dir, "leafbox.yaml")}
	require.NoError(t, os.MkdirAll(g.store, 0o750))
	require.NoError(t, os.WriteFile(g.cfg, fmt.Appendf(nil, `server_name: gw-ops
listen: 127.0.0.1
port: -1
http_port: -1
jetstream:
  store_dir: %q
leafnodes:
  remotes:
    - url: %q
uplinks:
  - name: tel
    subjects: [telemetry.>]
    hub_subject_prefix: site1.
    stream: SITE
`, g.store, leafURL), 0o600))
	return g
}

// service is the box's stand-in for systemctl.
func (g *opsGateway) service(verb string) {
	t := g.t
	t.Helper()
	switch verb {
	case "stop":
		if g.p != nil {
			g.nc.Close()
			stopJS(t, g.p)
			g.p = nil
		}
	case "start":
		dir := filepath.Dir(g.cfg)
		g.p = start(t, "run", "--config", g.cfg, "--ports-file-dir", dir)
		pf, _ := g.p.waitPorts(dir)
		g.mon = loopbackURL(t, pf.Monitoring).String()
		g.nc = natsConnect(t, loopbackURL(t, pf.Nats).String())
	default:
		t.Fatalf("systemctl %s leafbox: not part of the test", verb)
	}
}

// kill ends the box with SIGKILL: it died.
func (g *opsGateway) kill() {
	g.t.Helper()
	g.nc.Close()
	require.NoError(g.t, g.p.cmd.Process.Kill())
	g.p.wait()
	g.p = nil
}

// publish sends readings from..to-1 and flushes: the outbox holds them.
func (g *opsGateway) publish(from, to int) {
	g.t.Helper()
	for i := from; i < to; i++ {
		require.NoError(g.t, g.nc.Publish("telemetry.temp", fmt.Appendf(nil, "reading-%d", i)))
	}
	require.NoError(g.t, g.nc.Flush())
}

// drained waits until the box's outbox is empty with nothing in flight.
func (g *opsGateway) drained() {
	g.t.Helper()
	waitUplinkz(g.t, g.mon, func(u uplinkzEntry) bool { return u.BacklogMsgs == 0 && u.InFlight == 0 })
}

// TestOperationsGuideStore runs the guide's backup, replace and restore
// blocks on a gateway whose link to a real hub is cut, so that it holds a
// backlog: the backup is taken with 30 messages waiting; 10 more arrive,
// and the box dies (kill -9); its store, copied onto a new box as the
// guide says, drains all 40 into the hub stream exactly once, after the
// 20 sent before the cut. Restoring the older backup then sends its 30
// again with their ids, and the hub's duplicate window stores none twice;
// a new reading after that is stored, under a new id.
func TestOperationsGuideStore(t *testing.T) {
	ctx := testContext(t)
	hub, _, stream := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-ops", Leaf: "no_advertise: true"}, jetstream.StreamConfig{
		Name: "SITE", Subjects: []string{"site1.>"}, Storage: jetstream.FileStorage, Duplicates: time.Hour,
	})
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", hub.LeafPort))
	dir := t.TempDir()
	backups := filepath.Join(dir, "var", "backups")
	require.NoError(t, os.MkdirAll(backups, 0o700))

	old := newOpsGateway(t, filepath.Join(dir, "old"), proxy.LeafURL())
	old.service("start")
	waitUplinkz(t, old.mon, func(u uplinkzEntry) bool { return u.LinkState == "connected" })
	old.publish(0, 20)
	awaitHubMsgs(t, ctx, stream, 20, old.p, old.mon)
	proxy.Cut()
	waitUplinkz(t, old.mon, func(u uplinkzEntry) bool { return u.LinkState != "connected" })
	old.publish(20, 50)

	runGuideBlock(t, "backup", old.service, "/var/lib/leafbox", old.store, "/var/backups", backups)
	if old.p == nil {
		t.Fatal("the backup block did not start leafbox again")
	}
	if u := getUplinkz(t, old.mon); u.BacklogMsgs != 30 {
		t.Fatalf("after the backup the outbox holds %d messages, want 30: %+v", u.BacklogMsgs, u)
	}
	old.publish(50, 60)
	old.kill()

	// The new box, from the dead one's disk.
	repl := newOpsGateway(t, filepath.Join(dir, "new"), proxy.LeafURL())
	runGuideBlock(t, "replace", repl.service,
		"/mnt/old/var/lib/leafbox", old.store, "/var/lib/leafbox", repl.store)
	if u := getUplinkz(t, repl.mon); u.BacklogMsgs != 40 {
		t.Fatalf("the replacement's outbox holds %d messages, want the dead box's 40: %+v", u.BacklogMsgs, u)
	}
	proxy.Restore()
	awaitHubMsgs(t, ctx, stream, 60, repl.p, repl.mon)
	repl.drained()

	// Restore the backup onto the new box: its 30 go again, as duplicates.
	runGuideBlock(t, "restore", repl.service, "/var/lib/leafbox", repl.store, "/var/backups", backups)
	repl.drained()
	if n := streamMsgs(t, ctx, stream); n != 60 {
		t.Fatalf("after restoring the backup the hub holds %d messages, want 60", n)
	}
	repl.publish(60, 61)
	awaitHubMsgs(t, ctx, stream, 61, repl.p, repl.mon)
	requireReadingsOnce(t, ctx, stream, 61)
	repl.service("stop")
}

// requireReadingsOnce requires that stream holds reading-0 … reading-<n-1>,
// each once and in order, with distinct Nats-Msg-Ids of gw-ops's uplink.
func requireReadingsOnce(t *testing.T, ctx context.Context, stream jetstream.Stream, n int) {
	t.Helper()
	ids := map[string]bool{}
	for seq := uint64(1); seq <= uint64(n); seq++ {
		m, err := stream.GetMsg(ctx, seq)
		require.NoError(t, err)
		if want := fmt.Sprintf("reading-%d", seq-1); string(m.Data) != want {
			t.Fatalf("hub seq %d holds %q, want %q", seq, m.Data, want)
		}
		id := m.Header.Get(nats.MsgIdHdr)
		if !strings.HasPrefix(id, "gw-ops.tel.") || ids[id] {
			t.Fatalf("hub seq %d: Nats-Msg-Id %q (repeated: %v)", seq, id, ids[id])
		}
		ids[id] = true
	}
}
