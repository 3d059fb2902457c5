//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// The shipped hub cluster (deploy/hub) and its gateway
// (deploy/examples/gateway-to-hub.yaml), run as written except for ports
// and directories, so that the test binds no fixed port and writes
// nothing outside t.TempDir(). The substitutions, and nothing else:
//
//   - hub-N.conf: the client listen 0.0.0.0:422N+1 and the leafnode
//     listen 0.0.0.0:742N+1 become 127.0.0.1:-1 (free ports, read from
//     the log; the client port is also overridden by -a/-p flags), the
//     monitoring http 127.0.0.1:822N+1 becomes 127.0.0.1:-1, the cluster
//     ports 6222-6224 (listen and routes) become ports picked free just
//     before, and the store_dir /tmp/leafbox-hub/hub-N a temporary
//     directory. accounts.conf is included unchanged.
//   - streams.sh runs unchanged from deploy/hub, with NATS_URL naming the
//     test cluster's client ports.
//   - gateway-to-hub.yaml: listen 0.0.0.0:4333 and http 127.0.0.1:8333
//     become 127.0.0.1:-1, and the hub leafnode ports 7422-7424 in the
//     remote's URLs the test cluster's; the JetStream store is the
//     default one under a temporary $HOME.
//
// A second gateway is added the way deploy/hub/README.md says: a user
// added to accounts.conf and a reload of every node, and a copy of
// gateway-to-hub.yaml with the site's names.

// deployDir is the repository's deploy directory, seen from this package.
var deployDir = filepath.Join("..", "..", "deploy")

// The example hub's fixed ports for node i (0, 1, 2).
func hubClientPort(i int) int  { return 4222 + i }
func hubClusterPort(i int) int { return 6222 + i }
func hubLeafPort(i int) int    { return 7422 + i }
func hubHTTPPort(i int) int    { return 8222 + i }

// The example's hub user for operators and applications (accounts.conf).
const (
	hubOpsUser     = "ops"
	hubOpsPassword = "ops-password"
)

// substitute returns text with every old string of pairs (old, new, old,
// new, ...) replaced by its new one, all at once. Each old string must
// occur in text, so that a change to a shipped file fails the test rather
// than silently keeping a fixed port.
func substitute(t *testing.T, file, text string, pairs ...string) string {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(text, pairs[i]) {
			t.Fatalf("%s no longer contains %q: update the substitutions of this test", file, pairs[i])
		}
	}
	return strings.NewReplacer(pairs...).Replace(text)
}

// requireNoPort fails t if a line of text other than a comment still
// names one of ports.
func requireNoPort(t *testing.T, file, text string, ports []int) {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "#") || strings.HasPrefix(l, "//") {
			continue
		}
		for _, p := range ports {
			if regexp.MustCompile(`:` + strconv.Itoa(p) + `\b`).MatchString(line) {
				t.Fatalf("%s still binds fixed port %d after the substitutions: %q", file, p, line)
			}
		}
	}
}

// readDeploy returns the content of a shipped file under deploy.
func readDeploy(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(deployDir, rel))
	require.NoError(t, err)
	return string(b)
}

// startDeployHub starts the three nodes of deploy/hub in dir with the
// substitutions described above and waits for the JetStream metadata
// leader.
func startDeployHub(t *testing.T, dir string) *leaftest.Cluster {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "accounts.conf"), []byte(readDeploy(t, "hub/accounts.conf")), 0o600))
	return leaftest.StartClusterFiles(t, hubNodeNames, writeHubConfs(t, dir, "hub", "/tmp/leafbox-hub/"))
}

// hubNodeNames are the server names of the example hub's nodes.
var hubNodeNames = []string{"hub-1", "hub-2", "hub-3"}

// writeHubConfs writes into dir the three node files deploy/<hubDir>/hub-N.conf
// with the substitutions described above (storeDir is the shipped store
// directories' prefix) and returns their paths. The files they include
// must be put into dir by the caller.
func writeHubConfs(t *testing.T, dir, hubDir, storeDir string) []string {
	t.Helper()
	const nodes = 3
	clusterPorts := make([]int, nodes)
	for i := range clusterPorts {
		clusterPorts[i] = leaftest.FreePort(t)
	}
	var fixed []int
	for i := range nodes {
		fixed = append(fixed, hubClientPort(i), hubClusterPort(i), hubLeafPort(i), hubHTTPPort(i))
	}
	confs := make([]string, nodes)
	for i, name := range hubNodeNames {
		file := name + ".conf"
		pairs := []string{
			fmt.Sprintf("listen: 0.0.0.0:%d", hubClientPort(i)), "listen: 127.0.0.1:-1",
			fmt.Sprintf("listen: 0.0.0.0:%d", hubLeafPort(i)), "listen: 127.0.0.1:-1",
			fmt.Sprintf("http: 127.0.0.1:%d", hubHTTPPort(i)), "http: 127.0.0.1:-1",
			fmt.Sprintf("%q", storeDir+name), strconv.Quote(filepath.Join(dir, name)),
		}
		for j := range nodes {
			pairs = append(pairs, fmt.Sprintf("127.0.0.1:%d", hubClusterPort(j)), fmt.Sprintf("127.0.0.1:%d", clusterPorts[j]))
		}
		text := substitute(t, file, readDeploy(t, filepath.Join(hubDir, file)), pairs...)
		requireNoPort(t, file, text, fixed)
		confs[i] = filepath.Join(dir, file)
		require.NoError(t, os.WriteFile(confs[i], []byte(text), 0o600))
	}
	return confs
}

// runStreamsScript runs deploy/hub/streams.sh against the cluster with
// the nats CLI next to the nats-server binary.
func runStreamsScript(t *testing.T, hub *leaftest.Cluster) string {
	t.Helper()
	return runStreamsScriptEnv(t, hub, "NATS_USER=", "NATS_PASSWORD=", "NATS_CREDS=")
}

// runStreamsScriptEnv is runStreamsScript with the variables env (for
// example "NATS_CREDS=...") added to the script's environment.
func runStreamsScriptEnv(t *testing.T, hub *leaftest.Cluster, env ...string) string {
	t.Helper()
	cmd := exec.Command("bash", filepath.Join(deployDir, "hub", "streams.sh"))
	tools := filepath.Dir(leaftest.Binary(t))
	cmd.Env = append(os.Environ(),
		"PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+t.TempDir(), "XDG_CONFIG_HOME=", "NATS_CONTEXT=",
		"NATS_URL="+hub.ClientURLs())
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/hub/streams.sh: %v\n%s", err, out)
	}
	return string(out)
}

// hubAttempt bounds one request to the hub cluster: after a node loss a
// stream or consumer may take seconds to elect a new leader, and a
// request sent meanwhile is never answered.
const hubAttempt = 2 * time.Second

// pollHub calls check until it reports true, each call bounded by
// hubAttempt, and fails t with what and check's last state after
// waitTimeout. A hub stream has nothing to await.
func pollHub(t *testing.T, what string, check func(context.Context) (bool, string)) {
	t.Helper()
	deadline := time.After(waitTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), hubAttempt)
		ok, state := check(ctx)
		cancel()
		if ok {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("not within %v: %s (%s)", waitTimeout, what, state)
		case <-tick.C:
		}
	}
}

// hubPublish publishes to a hub stream with msgID until the stream
// acknowledges; the duplicate window stores a message sent twice once.
func hubPublish(t *testing.T, js jetstream.JetStream, subj string, payload []byte, msgID string) {
	t.Helper()
	pollHub(t, "the hub acknowledges a publish to "+subj, func(ctx context.Context) (bool, string) {
		_, err := js.Publish(ctx, subj, payload, jetstream.WithMsgID(msgID))
		if err != nil {
			return false, err.Error()
		}
		return true, ""
	})
}

// siteGateway is a running leafbox gateway of the example with a client
// subscribed to its commands.
type siteGateway struct {
	t    *testing.T
	site string // site1, site2, ...
	p    *proc
	mon  string
	conn *nats.Conn
	cmds *nats.Subscription
}

// startSiteGateway runs gateway-to-hub.yaml for gateway-0<n> of site<n>
// in dir against hub: the test's port substitutions, and for n > 1 the
// changes "Add a gateway" in deploy/hub/README.md lists. It returns once
// the gateway is attached and its client subscribed.
func startSiteGateway(t *testing.T, dir string, hub *leaftest.Cluster, n int) *siteGateway {
	t.Helper()
	const file = "gateway-to-hub.yaml"
	pairs := []string{
		"listen: 0.0.0.0:4333", "listen: 127.0.0.1:-1",
		"http: 127.0.0.1:8333", "http: 127.0.0.1:-1",
	}
	for i, node := range hub.Nodes {
		pairs = append(pairs, fmt.Sprintf("@127.0.0.1:%d", hubLeafPort(i)), fmt.Sprintf("@127.0.0.1:%d", node.LeafPort))
	}
	site := fmt.Sprintf("site%d", n)
	if n != 1 {
		pairs = append(pairs,
			"gateway-01", fmt.Sprintf("gateway-%02d", n), // server_name, user and password
			"domain: site1", "domain: "+site,
			"site.site1.", "site."+site+".",
			"cmd.site1.", "cmd."+site+".")
	}
	text := substitute(t, file, readDeploy(t, filepath.Join("examples", file)), pairs...)
	requireNoPort(t, file, text, []int{4333, 8333, hubLeafPort(0), hubLeafPort(1), hubLeafPort(2)})
	gwDir := filepath.Join(dir, site)
	require.NoError(t, os.MkdirAll(gwDir, 0o700))
	cfg := filepath.Join(gwDir, file)
	require.NoError(t, os.WriteFile(cfg, []byte(text), 0o600))
	g := &siteGateway{t: t, site: site}
	g.p = start(t, "run", "--config", cfg, "--ports-file-dir", gwDir)
	pf, _ := g.p.waitPorts(gwDir)
	g.mon = loopbackURL(t, pf.Monitoring).String()
	g.conn = natsConnect(t, loopbackURL(t, pf.Nats).String())
	var err error
	g.cmds, err = g.conn.SubscribeSync("cmd.>")
	require.NoError(t, err)
	require.NoError(t, g.conn.Flush())
	waitUplinkz(t, g.mon, func(u uplinkzEntry) bool { return u.LinkState == "connected" })
	return g
}

// attached returns the name of the hub node the gateway is attached to.
func (g *siteGateway) attached() string {
	g.t.Helper()
	return waitLeafz(g.t, g.mon, func(leafzEntry) bool { return true }).Name
}

// hubStreams are the example hub's streams, seen by its ops user.
type hubStreams struct {
	js                  jetstream.JetStream
	telemetry, commands jetstream.Stream
}

// roundTrip sends telemetry reading n up from g and command n down to it,
// and waits until the hub has the reading and the command's ack.
func (g *siteGateway) roundTrip(h *hubStreams, n int) {
	t := g.t
	t.Helper()
	payload := []byte(fmt.Sprintf("%s-%d", g.site, n))

	sent := time.Now()
	require.NoError(t, g.conn.Publish("telemetry.temp", payload))
	require.NoError(t, g.conn.Flush())
	hubSubject := "site." + g.site + ".telemetry.temp"
	pollHub(t, fmt.Sprintf("TELEMETRY stores %s on %s", payload, hubSubject), func(ctx context.Context) (bool, string) {
		m, err := h.telemetry.GetLastMsgForSubject(ctx, hubSubject)
		if err != nil {
			return false, err.Error()
		}
		id := m.Header.Get(nats.MsgIdHdr)
		wantID := strings.Replace(g.site, "site", "gateway-0", 1) + ".telemetry."
		return string(m.Data) == string(payload) && strings.HasPrefix(id, wantID),
			fmt.Sprintf("last %q with Nats-Msg-Id %q", m.Data, id)
	})
	up := time.Since(sent)

	sent = time.Now()
	hubPublish(t, h.js, "cmd."+g.site+".door.open", payload, string(payload))
	m := nextMsg(t, g.cmds)
	if m.Subject != "cmd.door.open" || string(m.Data) != string(payload) {
		t.Fatalf("%s got command %s %q, want cmd.door.open %q", g.site, m.Subject, m.Data, payload)
	}
	down := time.Since(sent)
	durable := strings.Replace(g.site, "site", "gateway-0", 1) + "_commands"
	pollHub(t, "the hub has the ack of command "+string(payload), func(ctx context.Context) (bool, string) {
		c, err := h.commands.Consumer(ctx, durable)
		if err != nil {
			return false, err.Error()
		}
		ci, err := c.Info(ctx)
		if err != nil {
			return false, err.Error()
		}
		return ci.AckFloor.Stream == ci.Delivered.Stream && ci.NumPending == 0,
			fmt.Sprintf("%s: delivered %d, ack floor %d, pending %d", durable, ci.Delivered.Stream, ci.AckFloor.Stream, ci.NumPending)
	})
	t.Logf("%s: reading %d in TELEMETRY %v after its publish; command %d on the gateway %v after its publish",
		g.site, n, up.Round(time.Millisecond), n, down.Round(time.Millisecond))
}

// TestDeployHubCluster runs the shipped hub cluster example: the three
// nats-server nodes of deploy/hub, the streams made by its script, and a
// leafbox gateway configured by deploy/examples/gateway-to-hub.yaml. A
// message published on the gateway reaches the hub stream TELEMETRY
// through the uplink, and a command stored in the hub stream COMMANDS
// reaches a subscriber on the gateway through the downlink. A second
// gateway is added while the first stays attached. Then the hub node the
// first gateway is attached to is killed: the link fails over to another
// node and both directions still work.
func TestDeployHubCluster(t *testing.T) {
	began := time.Now()
	elapsed := func() time.Duration { return time.Since(began).Round(time.Millisecond) }
	dir := t.TempDir()
	hub := startDeployHub(t, dir)
	t.Logf("%v: hub cluster up", elapsed())

	// The streams, as deploy/hub/README.md says; a second run changes
	// nothing.
	runStreamsScript(t, hub)
	if out := runStreamsScript(t, hub); strings.Count(out, "No difference in configuration") != 2 {
		t.Fatalf("second run of streams.sh changed the streams:\n%s", out)
	}
	ctx := testContext(t)
	hc, err := nats.Connect(hub.ClientURLs(), nats.UserInfo(hubOpsUser, hubOpsPassword), nats.Timeout(waitTimeout))
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	h := &hubStreams{}
	h.js, err = jetstream.New(hc)
	require.NoError(t, err)
	h.telemetry, err = h.js.Stream(ctx, "TELEMETRY")
	require.NoError(t, err)
	h.commands, err = h.js.Stream(ctx, "COMMANDS")
	require.NoError(t, err)
	for _, s := range []jetstream.Stream{h.telemetry, h.commands} {
		if c := s.CachedInfo().Config; c.Replicas != 3 || c.Storage != jetstream.FileStorage {
			t.Fatalf("stream %s: %d replicas, %v storage; want 3, file", c.Name, c.Replicas, c.Storage)
		}
	}
	t.Logf("%v: streams created", elapsed())

	gw1 := startSiteGateway(t, dir, hub, 1)
	t.Logf("%v: gateway-01 attached to %s", elapsed(), gw1.attached())
	gw1.roundTrip(h, 1)

	// Add a gateway: its user in accounts.conf, reloaded by every node.
	accounts := filepath.Join(dir, "accounts.conf")
	const gw1User = `{user: gateway-01, password: gateway-01-password, allowed_connection_types: ["LEAFNODE"]}`
	text := substitute(t, "accounts.conf", readDeploy(t, "hub/accounts.conf"),
		gw1User, gw1User+"\n      "+strings.ReplaceAll(gw1User, "gateway-01", "gateway-02"))
	require.NoError(t, os.WriteFile(accounts, []byte(text), 0o600))
	for _, n := range hub.Nodes {
		n.Reload()
	}
	gw2 := startSiteGateway(t, dir, hub, 2)
	t.Logf("%v: nodes reloaded; gateway-02 attached to %s", elapsed(), gw2.attached())
	gw2.roundTrip(h, 1)
	gw1.roundTrip(h, 2)
	if n := strings.Count(gw1.p.log(), "leaf: connected"); n != 1 {
		t.Fatalf("gateway-01 connected %d times; the reload dropped it:\n%s", n, gw1.p.log())
	}

	// Lose the hub node the first gateway is attached to.
	lost := gw1.attached()
	killed := time.Now()
	hub.Node(lost).Kill()
	waitLeafz(t, gw1.mon, func(l leafzEntry) bool { return l.Name != lost })
	t.Logf("gateway-01 attached to another node %v after %s died", time.Since(killed).Round(time.Millisecond), lost)
	gw1.roundTrip(h, 3)
	gw2.roundTrip(h, 2)
	t.Logf("%v: %s killed; gateway-01 works through %s", elapsed(), lost, gw1.attached())

	stopJS(t, gw1.p)
	stopJS(t, gw2.p)
}
