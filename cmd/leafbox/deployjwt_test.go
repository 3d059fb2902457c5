//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// The JWT (operator mode) hub of deploy/hub-jwt and its gateway
// deploy/hub-jwt/gateway.yaml, run as written except for ports and
// directories, with the keys and credentials issue-gateway.sh makes in a
// temporary folder:
//
//   - hub-N.conf: the substitutions of deploy/hub's files (see
//     deployhub_test.go), the store_dir /tmp/leafbox-hub-jwt/hub-N
//     included; resolver.conf is the script's, copied beside them as the
//     README says.
//   - gateway.yaml: listen 0.0.0.0:4333 and http 127.0.0.1:8333 become
//     127.0.0.1:-1 and the hub leafnode ports 7422-7424 the test
//     cluster's; gateway-01.creds is the script's, copied beside it.

// runIssueGateway runs deploy/hub-jwt/issue-gateway.sh DIR SITE GATEWAY
// [IDENTITY] with the nats CLI next to the nats-server binary and returns
// its output.
func runIssueGateway(t *testing.T, dir, site, gateway string, identity ...string) string {
	t.Helper()
	cmd := exec.Command("bash", append([]string{filepath.Join(deployDir, "hub-jwt", "issue-gateway.sh"), dir, site, gateway}, identity...)...)
	tools := filepath.Dir(leaftest.Binary(t))
	cmd.Env = append(os.Environ(),
		"PATH="+tools+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+t.TempDir(), "XDG_CONFIG_HOME=", "XDG_DATA_HOME=", "NATS_CONTEXT=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/hub-jwt/issue-gateway.sh %s %s %s %v: %v\n%s", dir, site, gateway, identity, err, out)
	}
	return string(out)
}

// copyFile copies src to dst with mode 0600.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, b, 0o600))
}

// requireConfigTest runs nats-server's own configuration test on conf.
func requireConfigTest(t *testing.T, conf string) {
	t.Helper()
	out, err := exec.Command(leaftest.Binary(t), "-t", "-c", conf).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "is valid") {
		t.Fatalf("nats-server -t -c %s: %v\n%s", conf, err, out)
	}
}

// writeJWTGateway writes deploy/hub-jwt/gateway.yaml into dir with the
// test's substitutions and creds as its gateway-01.creds, checks it with
// `leafbox config check`, and returns its path.
func writeJWTGateway(t *testing.T, dir string, hub *leaftest.Cluster, creds string) string {
	t.Helper()
	return writeJWTSiteGateway(t, dir, hub, creds, 1)
}

// writeJWTSiteGateway is writeJWTGateway for gateway-0<n> of site<n>: for
// n > 1 with the changes "Add a gateway" in deploy/hub-jwt/README.md
// lists (the creds file is then gateway-0<n>.creds).
func writeJWTSiteGateway(t *testing.T, dir string, hub *leaftest.Cluster, creds string, n int) string {
	t.Helper()
	const file = "gateway.yaml"
	pairs := []string{
		"listen: 0.0.0.0:4333", "listen: 127.0.0.1:-1",
		"http: 127.0.0.1:8333", "http: 127.0.0.1:-1",
	}
	gateway := fmt.Sprintf("gateway-%02d", n)
	if n != 1 {
		site := fmt.Sprintf("site%d", n)
		pairs = append(pairs,
			"gateway-01", gateway, // server_name and the creds file
			"domain: site1", "domain: "+site,
			"site.site1.", "site."+site+".",
			"cmd.site1.", "cmd."+site+".")
	}
	for i, node := range hub.Nodes {
		pairs = append(pairs, fmt.Sprintf("//127.0.0.1:%d", hubLeafPort(i)), fmt.Sprintf("//127.0.0.1:%d", node.LeafPort))
	}
	text := substitute(t, file, readDeploy(t, filepath.Join("hub-jwt", file)), pairs...)
	requireNoPort(t, file, text, []int{4333, 8333, hubLeafPort(0), hubLeafPort(1), hubLeafPort(2)})
	require.NoError(t, os.MkdirAll(dir, 0o700))
	copyFile(t, creds, filepath.Join(dir, gateway+".creds"))
	cfg := filepath.Join(dir, file)
	require.NoError(t, os.WriteFile(cfg, []byte(text), 0o600))
	out, err := exec.Command(binary, "config", "check", cfg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok: ") {
		t.Fatalf("leafbox config check %s: %v\n%s", cfg, err, out)
	}
	return cfg
}

// TestDeployHubJWT issues one gateway's credentials with the shipped
// script, runs the JWT hub cluster of deploy/hub-jwt with them (each node
// file passing nats-server's config test first), makes the streams in the
// site's account with streams.sh and the account's ops credentials, and
// runs deploy/hub-jwt/gateway.yaml: a message published on the gateway
// lands in the hub stream TELEMETRY of the site's account through the
// uplink, and a command from that account's COMMANDS reaches the gateway
// through the downlink. A gateway with credentials of another operator is
// refused, and says so in its log and /uplinkz.
func TestDeployHubJWT(t *testing.T) {
	began := time.Now()
	elapsed := func() time.Duration { return time.Since(began).Round(time.Millisecond) }
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	runIssueGateway(t, secrets, "site1", "gateway-01")
	// Running it again keeps the keys: the same credentials come out.
	first, err := os.ReadFile(filepath.Join(secrets, "site1", "gateway-01.creds"))
	require.NoError(t, err)
	runIssueGateway(t, secrets, "site1", "gateway-01")
	if again, err := os.ReadFile(filepath.Join(secrets, "site1", "gateway-01.creds")); err != nil || !sameUserKey(string(first), string(again)) {
		t.Fatalf("a second run of issue-gateway.sh changed the gateway's key (%v)", err)
	}
	for _, f := range []string{"", "site1", "site1/gateway-01.creds", "nsc"} {
		fi, err := os.Stat(filepath.Join(secrets, f))
		require.NoError(t, err)
		if fi.Mode().Perm()&0o077 != 0 {
			t.Fatalf("%s is mode %v: readable by others", filepath.Join(secrets, f), fi.Mode().Perm())
		}
	}
	t.Logf("%v: credentials issued", elapsed())

	copyFile(t, filepath.Join(secrets, "resolver.conf"), filepath.Join(dir, "resolver.conf"))
	confs := writeHubConfs(t, dir, "hub-jwt", "/tmp/leafbox-hub-jwt/")
	for _, conf := range confs {
		requireConfigTest(t, conf)
	}
	hub := leaftest.StartClusterFiles(t, hubNodeNames, confs)
	t.Logf("%v: JWT hub cluster up", elapsed())

	hc := siteStreams(t, hub, filepath.Join(secrets, "site1", "ops.creds"))
	h := accountStreams(t, hc)
	t.Logf("%v: streams created in account site1", elapsed())

	gwDir := filepath.Join(dir, "site1")
	cfg := writeJWTGateway(t, gwDir, hub, filepath.Join(secrets, "site1", "gateway-01.creds"))
	g := startJWTGateway(t, gwDir, cfg)
	t.Logf("%v: gateway-01 attached to %s", elapsed(), g.attached())
	g.roundTrip(h, 1)
	// Its leaf user's permissions cover all the gateway does on the hub.
	if strings.Contains(g.p.log(), "Permissions Violation") || strings.Contains(g.p.log(), "permission") {
		t.Fatalf("the gateway met a permissions violation on the hub:\n%s", g.p.log())
	}

	// A gateway with the credentials of another operator's user is refused.
	other := filepath.Join(dir, "other-secrets")
	runIssueGateway(t, other, "site1", "gateway-01")
	badDir := filepath.Join(dir, "bad")
	bad := start(t, "run", "--config", writeJWTGateway(t, badDir, hub, filepath.Join(other, "site1", "gateway-01.creds")),
		"--ports-file-dir", badDir)
	pf, _ := bad.waitPorts(badDir)
	badMon := loopbackURL(t, pf.Monitoring).String()
	bad.waitLog(`msg="leaf: connect failed"`)
	bad.waitLog(`error="leaf: hub error: Authorization Violation"`)
	u := waitUplinkz(t, badMon, func(u uplinkzEntry) bool { return u.LinkState != "" })
	if u.LinkState == "connected" {
		t.Fatalf("the gateway with another operator's credentials is connected: %+v", u)
	}
	t.Logf("refused gateway: /uplinkz link_state %q; log:\n%s", u.LinkState, lastLines(bad.log(), 5))
	stopJS(t, bad)

	// The good gateway stays attached and working, and the hub never saw
	// it step outside its leaf user's permissions.
	g.roundTrip(h, 2)
	for _, n := range hub.Nodes {
		if logs := n.Logs(); strings.Contains(logs, "Permissions Violation") {
			t.Fatalf("%s logged a permissions violation:\n%s", n.Name, logs)
		}
	}

	// Rotate the gateway's credentials as docs/operations.md says: a new
	// user for the site, installed on the gateway, which restarts; the old
	// user revoked, and the hub nodes reloaded with the new resolver.conf.
	oldCreds := filepath.Join(dir, "old-gateway-01.creds")
	copyFile(t, filepath.Join(gwDir, "gateway-01.creds"), oldCreds)
	runGuideBlock(t, "rotate-jwt", func(verb string) {
		if verb != "restart" {
			t.Fatalf("systemctl %s leafbox in the rotation block", verb)
		}
		g.conn.Close()
		stopJS(t, g.p)
		g = startJWTGateway(t, gwDir, cfg)
	}, "~/leafbox-hub-secrets", secrets, "/etc/leafbox", gwDir)
	if sameUserKey(string(first), readFile(t, filepath.Join(gwDir, "gateway-01.creds"))) {
		t.Fatal("the rotation block left the gateway with its old credentials")
	}
	// Add a gateway (deploy/hub-jwt/README.md) in the same reload: a new
	// account site2 with its streams and gateway-02.
	runIssueGateway(t, secrets, "site2", "gateway-02")
	copyFile(t, filepath.Join(secrets, "resolver.conf"), filepath.Join(dir, "resolver.conf"))
	for _, n := range hub.Nodes {
		n.Reload()
	}
	g.roundTrip(h, 3)
	h2 := accountStreams(t, siteStreams(t, hub, filepath.Join(secrets, "site2", "ops.creds")))
	gw2Dir := filepath.Join(dir, "site2")
	g2 := startJWTSiteGateway(t, gw2Dir, writeJWTSiteGateway(t, gw2Dir, hub, filepath.Join(secrets, "site2", "gateway-02.creds"), 2), "site2")
	g2.roundTrip(h2, 1)
	if n, err := h.telemetry.Info(testContext(t)); err != nil || n.State.Msgs != 3 {
		t.Fatalf("site1's TELEMETRY: %v, %v; want its own 3 readings only", n, err)
	}
	if n := strings.Count(g.p.log(), "leaf: connected"); n != 1 {
		t.Fatalf("gateway-01 connected %d times; the reload dropped it:\n%s", n, g.p.log())
	}
	stopJS(t, g2.p)
	revokedDir := filepath.Join(dir, "revoked")
	revoked := start(t, "run", "--config", writeJWTGateway(t, revokedDir, hub, oldCreds), "--ports-file-dir", revokedDir)
	revoked.waitLog(`error="leaf: hub error: Authorization Violation"`)
	stopJS(t, revoked)
	t.Logf("%v: credentials rotated; the old user is refused", elapsed())

	stopJS(t, g.p)
	t.Logf("%v: done", elapsed())
}

// siteStreams makes the hub streams in the account of the ops user creds
// with streams.sh, and returns a connection of that user.
func siteStreams(t *testing.T, hub *leaftest.Cluster, creds string) *nats.Conn {
	t.Helper()
	runStreamsScriptEnv(t, hub, "NATS_CREDS="+creds)
	hc, err := nats.Connect(hub.ClientURLs(), nats.UserCredentials(creds), nats.Timeout(waitTimeout))
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	return hc
}

// accountStreams returns the streams TELEMETRY and COMMANDS of hc's account.
func accountStreams(t *testing.T, hc *nats.Conn) *hubStreams {
	t.Helper()
	ctx := testContext(t)
	h := &hubStreams{}
	var err error
	h.js, err = jetstream.New(hc)
	require.NoError(t, err)
	h.telemetry, err = h.js.Stream(ctx, "TELEMETRY")
	require.NoError(t, err)
	h.commands, err = h.js.Stream(ctx, "COMMANDS")
	require.NoError(t, err)
	return h
}

// startJWTGateway runs the gateway configuration cfg in dir and returns it
// once its uplink is connected, with a client subscribed to cmd.>.
func startJWTGateway(t *testing.T, dir, cfg string) *siteGateway {
	t.Helper()
	return startJWTSiteGateway(t, dir, cfg, "site1")
}

// startJWTSiteGateway is startJWTGateway for the gateway of site, with
// args added to `leafbox run`'s.
func startJWTSiteGateway(t *testing.T, dir, cfg, site string, args ...string) *siteGateway {
	t.Helper()
	g := &siteGateway{t: t, site: site}
	g.p = start(t, append([]string{"run", "--config", cfg, "--ports-file-dir", dir}, args...)...)
	pf, _ := g.p.waitPorts(dir)
	g.mon = loopbackURL(t, pf.Monitoring).String()
	g.conn = natsConnect(t, loopbackURL(t, pf.Nats).String())
	var err error
	g.cmds, err = g.conn.SubscribeSync("cmd.>")
	require.NoError(t, err)
	require.NoError(t, g.conn.Flush())
	waitUplinkz(t, g.mon, func(u uplinkzEntry) bool { return u.LinkState == "connected" })
	return g
}

// readFile returns the content of path.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// sameUserKey reports whether two .creds files hold the same user seed.
func sameUserKey(a, b string) bool {
	seed := func(s string) string {
		i := strings.Index(s, "-----BEGIN USER NKEY SEED-----")
		if i < 0 {
			return ""
		}
		return strings.Fields(s[i+len("-----BEGIN USER NKEY SEED-----"):])[0]
	}
	return seed(a) != "" && seed(a) == seed(b)
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestDeployHubJWTFleet sends fleet configuration bundles through the JWT
// hub of deploy/hub-jwt to a gateway attached with the credentials
// issue-gateway.sh made: the leaf user may receive its own bundles and
// its groups' and answer them. A bundle to its key and one to its group
// are applied (the answers reach the sender in the site's account, /varz
// shows the configuration); issued again with the gateway's identity, the
// credentials keep their key, the gateway restarted with them still takes
// its bundles, and they may no longer receive another gateway's.
func TestDeployHubJWTFleet(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	runIssueGateway(t, secrets, "site1", "gateway-01")
	copyFile(t, filepath.Join(secrets, "resolver.conf"), filepath.Join(dir, "resolver.conf"))
	hub := leaftest.StartClusterFiles(t, hubNodeNames, writeHubConfs(t, dir, "hub-jwt", "/tmp/leafbox-hub-jwt/"))
	ops := filepath.Join(secrets, "site1", "ops.creds")
	hc := siteStreams(t, hub, ops)

	// deploy/hub-jwt/gateway.yaml with a fleet block: the operator key
	// that signs its bundles, and a group.
	seed := filepath.Join(dir, "fleet-operator.nk")
	op := writeOperator(t, seed)
	gwDir := filepath.Join(dir, "site1")
	cfg := writeJWTGateway(t, gwDir, hub, filepath.Join(secrets, "site1", "gateway-01.creds"))
	base := readFile(t, cfg) + fmt.Sprintf("\nfleet:\n  trusted_keys: [%s]\n  groups: [north]\n", op)
	require.NoError(t, os.WriteFile(cfg, []byte(base), 0o600))
	if out, err := exec.Command(binary, "config", "check", cfg).CombinedOutput(); err != nil {
		t.Fatalf("leafbox config check %s with fleet: %v\n%s", cfg, err, out)
	}
	// One store across the restart below (start gives each run a new
	// HOME, where the store would be): the identity and the applied
	// bundle live there.
	store := filepath.Join(dir, "store")
	g := startJWTSiteGateway(t, gwDir, cfg, "site1", "--store-dir", store)
	gw := fleetVarz(t, g.mon)["public_key"].(string)
	t.Logf("gateway-01 attached to %s, identity %s", g.attached(), gw)

	// send signs base plus extra as a bundle for target (--gateway KEY or
	// --group NAME) and requests it on subj from the site's account,
	// retried while the hub has not learnt the gateway's interest.
	send := func(target []string, serial int, extra, subj string) string {
		t.Helper()
		site := filepath.Join(gwDir, fmt.Sprintf("bundle-%d.yaml", serial))
		require.NoError(t, os.WriteFile(site, []byte(base+extra), 0o600))
		bundle := filepath.Join(dir, fmt.Sprintf("bundle-%d.json", serial))
		args := append(append([]string{"fleet", "bundle", "--seed", seed}, target...), "--serial", fmt.Sprint(serial), "-o", bundle, site)
		if out, err := exec.Command(binary, args...).CombinedOutput(); err != nil {
			t.Fatalf("leafbox %v: %v\n%s", args, err, out)
		}
		data := []byte(readFile(t, bundle))
		deadline := time.Now().Add(waitTimeout)
		for {
			m, err := hc.Request(subj, data, waitTimeout)
			if err == nil {
				return string(m.Data)
			}
			if !errors.Is(err, nats.ErrNoResponders) || time.Now().After(deadline) {
				t.Fatalf("request %s from the site's account: %v; gateway log:\n%s", subj, err, lastLines(g.p.log(), 20))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	applied := func(answer string, serial int, maxConns float64) {
		t.Helper()
		if !strings.Contains(answer, `"status":"applied"`) || !strings.Contains(answer, fmt.Sprintf(`"applied_serial":%d`, serial)) {
			t.Fatalf("answer to bundle %d: %s; gateway log:\n%s", serial, answer, lastLines(g.p.log(), 20))
		}
		v := fleetVarz(t, g.mon)
		conf, _ := v["config"].(map[string]any)
		if v["max_connections"] != maxConns || conf["source"] != "fleet" || conf["fleet_serial"] != float64(serial) {
			t.Fatalf("/varz after bundle %d: max_connections %v, config %v", serial, v["max_connections"], conf)
		}
	}
	applied(send([]string{"--gateway", gw}, 1, "max_connections: 71\n", "$LEAFBOX.fleet."+gw+".config"), 1, 71)
	applied(send([]string{"--group", "north"}, 2, "max_connections: 72\n", "$LEAFBOX.fleet.group.north.config"), 2, 72)
	g.roundTrip(accountStreams(t, hc), 1) // the uplink and downlink still work on the bundle
	t.Log("bundles to the gateway's key and to its group applied through the JWT hub")

	// Issued again with the gateway's identity: the same key, narrower
	// permissions; the gateway restarts with the new .creds.
	first := readFile(t, filepath.Join(secrets, "site1", "gateway-01.creds"))
	runIssueGateway(t, secrets, "site1", "gateway-01", gw)
	creds := filepath.Join(secrets, "site1", "gateway-01.creds")
	if again := readFile(t, creds); !sameUserKey(first, again) || again == first {
		t.Fatal("issue-gateway.sh with the identity did not rewrite the same user's credentials")
	}
	copyFile(t, creds, filepath.Join(gwDir, "gateway-01.creds"))
	g.conn.Close()
	stopJS(t, g.p)
	g = startJWTSiteGateway(t, gwDir, cfg, "site1", "--store-dir", store)
	g.p.waitLog("fleet: running on the applied bundle")
	if v := fleetVarz(t, g.mon); v["public_key"] != gw || v["max_connections"] != float64(72) {
		t.Fatalf("/varz after the restart: public_key %v (was %s), max_connections %v (bundle 2 had 72)", v["public_key"], gw, v["max_connections"])
	}
	applied(send([]string{"--gateway", gw}, 3, "max_connections: 73\n", "$LEAFBOX.fleet."+gw+".config"), 3, 73)
	for _, n := range hub.Nodes {
		if logs := n.Logs(); strings.Contains(logs, "Permissions Violation") {
			t.Fatalf("%s logged a permissions violation for the gateway:\n%s", n.Name, logs)
		}
	}

	// The same user may subscribe its own fleet subject, not another
	// gateway's.
	violations := make(chan error, 4)
	nc, err := nats.Connect(hub.ClientURLs(), nats.UserCredentials(creds), nats.Timeout(waitTimeout),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { violations <- err }))
	require.NoError(t, err)
	defer nc.Close()
	own, other := "$LEAFBOX.fleet."+gw+".config", "$LEAFBOX.fleet."+nkeysServerKey(t)+".config"
	for _, subj := range []string{own, other} {
		_, err := nc.SubscribeSync(subj)
		require.NoError(t, err)
		require.NoError(t, nc.FlushTimeout(waitTimeout))
	}
	// The server answers each SUB in order, so a refusal of own would
	// come before other's.
	select {
	case err := <-violations:
		if !strings.Contains(err.Error(), `Permissions Violation for Subscription to "`+other+`"`) {
			t.Fatalf("with the gateway's credentials: %v; want only %s refused", err, other)
		}
	case <-time.After(waitTimeout):
		t.Fatalf("subscribing %s with the gateway's credentials was not refused", other)
	}
	stopJS(t, g.p)
}

// fleetVarz returns the gateway's /varz.
func fleetVarz(t *testing.T, mon string) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(get(t, mon+"/varz")), &v))
	return v
}

// nkeysServerKey returns a fresh server NKey's public key: another
// gateway's identity.
func nkeysServerKey(t *testing.T) string {
	t.Helper()
	kp, err := nkeys.CreateServer()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	return pub
}
