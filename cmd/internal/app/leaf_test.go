package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// writeSeed writes a new user NKey seed to dir/name and returns the public
// key.
func writeSeed(t testing.TB, dir, name string) (public string) {
	t.Helper()
	pub, seed := newUserKey(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700))
	writeFile(t, dir, name, seed+"\n")
	return pub
}

func TestLeafConfigMapping(t *testing.T) {
	dir := t.TempDir()
	writeSeed(t, dir, "secrets/gw.nk")
	path := writeFile(t, dir, "gw.yaml", `
server_name: gw-7
accounts: {SITE: {}}
jetstream: {enabled: true, store_dir: js, domain: edge}
leafnodes:
  remotes:
    - urls: [nats-leaf://hub1:7422, "tls://hub2"]
      url: nats://leaf:s3cret@hub3:7422
      nkey: secrets/gw.nk
      compression: fast
      deny_imports: admin.>
      deny_exports: ["local.>", "debug.*"]
    - url: nats://hub1:7422
      account: SITE
`)
	c, err := Load(path)
	require.NoError(t, err)
	c.SetDefaults(testEnv)
	require.NoError(t, c.Validate())

	global := c.LeafConfig(&c.LeafNodes.Remotes[0])
	require.DeepEqual(t, global, leaf.Config{
		URLs:         []string{"nats-leaf://hub1:7422", "tls://hub2", "nats://leaf:s3cret@hub3:7422"},
		NkeySeedFile: filepath.Join(dir, "secrets", "gw.nk"), // relative to the file
		Compression:  leaf.CompressionS2Fast,                 // "fast", by its canonical name
		DenyImports:  []string{"admin.>"},
		DenyExports:  []string{"local.>", "debug.*"},
		Name:         "gw-7",
		Domain:       "edge",
		JetStream:    true,
	})
	site := c.LeafConfig(&c.LeafNodes.Remotes[1])
	require.DeepEqual(t, site.Account, "SITE")
	require.DeepEqual(t, site.JetStream, false) // the engine serves the global account only
	require.DeepEqual(t, site.Domain, "edge")
	require.DeepEqual(t, site.NkeySeedFile, "")

	// Build makes one link per remote, all bound to the server's id; none
	// connects before Start.
	a, err := Build(c, Flags{})
	require.NoError(t, err)
	require.DeepEqual(t, a.node.NumRemotes(), 2)
	for i := range a.node.NumRemotes() {
		require.DeepEqual(t, a.node.Link(i).Status().State, leaf.StateIdle)
	}
	require.DeepEqual(t, a.node.Remote(0).URLs, []string{"nats-leaf://hub1:7422", "tls://hub2", "nats://leaf:[REDACTED]@hub3:7422"})
	require.DeepEqual(t, a.node.Remote(0).LocalAccount, "$G")
	require.DeepEqual(t, a.node.Remote(0).Deny.Exports, []string{"local.>", "debug.*"})
	require.DeepEqual(t, a.node.Remote(1).LocalAccount, "SITE")
	if a.node.Remote(1).Deny != nil {
		t.Fatalf("deny rules without deny lists: %+v", a.node.Remote(1).Deny)
	}
}

func TestAppReloadLeafRemotes(t *testing.T) {
	const base = "http_port: 0\nserver_name: gw\nleafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"
	a := startApp(t, base, Flags{})
	reload := func(src string) error {
		c := loopbackConfig(t, src, tempEnv(t))
		return a.Reload(c)
	}
	require.NoError(t, reload(base+"max_payload: 2MB\n"))
	require.ErrorContains(t, reload("http_port: 0\nserver_name: gw\nleafnodes: {remotes: [{url: 'nats://127.0.0.1:2'}]}\n"),
		"leafnodes: changing leafnode remotes needs a restart")
	require.ErrorContains(t, reload("http_port: 0\nserver_name: gw\n"), "leafnodes: changing leafnode remotes needs a restart")
	require.ErrorContains(t, reload("http_port: 0\nserver_name: gw2\nleafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"),
		"server_name, jetstream: the leafnode links announce them to the hubs; changing them needs a restart")
}

func TestAppReloadCannotAddRemotes(t *testing.T) {
	a := startApp(t, "http_port: 0", Flags{})
	c := loopbackConfig(t, "http_port: 0\nleafnodes: {remotes: [{url: nats://h:1}]}", tempEnv(t))
	require.ErrorContains(t, a.Reload(c), "leafnodes: changing leafnode remotes needs a restart")
}

// TestAppLeafLink runs an App with a link to a real nats-server hub: the
// production adapter carries interest and messages both ways, gives hub
// messages nats-server's queue semantics, and /leafz and /varz show the
// link.
func TestAppLeafLink(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{Name: "hub-a"})
	a := startApp(t, "http_port: -1\nserver_name: gw-app\nleafnodes: {remotes: [{url: '"+hub.LeafURL()+"', deny_exports: [secret.>]}]}\n", Flags{})
	link := a.node.Link(0)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, link.WaitConnected(ctx))

	gw := natsConnect(t, "nats://"+a.Addr().String())
	hc := natsConnect(t, hub.ClientURL())
	flush := func() {
		t.Helper()
		require.NoError(t, gw.Flush())
		require.NoError(t, hc.Flush())
		require.NoError(t, link.Flush(ctx))
	}

	// Gateway → hub, except what deny_exports holds back.
	up, err := hc.SubscribeSync("up.>")
	require.NoError(t, err)
	secret, err := hc.SubscribeSync("secret.>")
	require.NoError(t, err)
	flush()
	require.NoError(t, gw.Publish("secret.key", []byte("x")))
	require.NoError(t, gw.Publish("up.temp", []byte("21.5")))
	if m := nextMsg(t, up); m.Subject != "up.temp" || string(m.Data) != "21.5" {
		t.Fatalf("hub got %q %q", m.Subject, m.Data)
	}
	flush()
	if n, _, _ := secret.Pending(); n != 0 {
		t.Fatalf("a denied export reached the hub")
	}

	// Hub → gateway, with queue groups as nats-server has them: the hub
	// prefers its own member of group "workers", so the gateway's member
	// must not get a copy when the message crosses for a plain subscriber.
	down, err := gw.SubscribeSync("down.>")
	require.NoError(t, err)
	gwWorker, err := gw.QueueSubscribeSync("down.job", "workers")
	require.NoError(t, err)
	hubWorker, err := hc.QueueSubscribeSync("down.job", "workers")
	require.NoError(t, err)
	flush()
	require.NoError(t, hc.Publish("down.job", []byte("j1")))
	nextMsg(t, down)
	nextMsg(t, hubWorker)
	flush()
	if n, _, _ := gwWorker.Pending(); n != 0 {
		t.Fatal("the gateway's queue member got a message the hub's member already had")
	}
	// Without a member on the hub, the hub names the group and the
	// gateway's member gets it.
	require.NoError(t, hubWorker.Unsubscribe())
	flush()
	require.NoError(t, hc.Publish("down.job", []byte("j2")))
	if m := nextMsg(t, gwWorker); string(m.Data) != "j2" {
		t.Fatalf("gateway worker got %q", m.Data)
	}

	// /leafz lists the link with the hub's interest; /varz counts it.
	var lz struct {
		Leafs []struct {
			Name    string   `json:"name"`
			IsSpoke bool     `json:"is_spoke"`
			Account string   `json:"account"`
			IP      string   `json:"ip"`
			Port    int      `json:"port"`
			OutMsgs int64    `json:"out_msgs"`
			InMsgs  int64    `json:"in_msgs"`
			Subs    []string `json:"subscriptions_list"`
		} `json:"leafs"`
	}
	getJSON(t, "http://"+a.MonitorAddr().String()+"/leafz?subs=1", &lz)
	if len(lz.Leafs) != 1 {
		t.Fatalf("/leafz lists %d leafs, want 1: %+v", len(lz.Leafs), lz)
	}
	l := lz.Leafs[0]
	if l.Name != "hub-a" || !l.IsSpoke || l.Account != "$G" || l.IP != "127.0.0.1" || l.Port != hub.LeafPort ||
		l.OutMsgs < 1 || l.InMsgs < 2 {
		t.Fatalf("/leafz entry: %+v", l)
	}
	for _, want := range []string{"up.>"} {
		if !contains(l.Subs, want) {
			t.Fatalf("/leafz subscriptions_list %v lacks %q", l.Subs, want)
		}
	}
	var vz struct {
		Leafs int `json:"leafnodes"`
		Leaf  struct {
			Remotes []struct {
				LocalAccount string   `json:"local_account"`
				URLs         []string `json:"urls"`
				Deny         struct {
					Exports []string `json:"exports"`
				} `json:"deny"`
			} `json:"remotes"`
		} `json:"leaf"`
	}
	getJSON(t, "http://"+a.MonitorAddr().String()+"/varz", &vz)
	if vz.Leafs != 1 || len(vz.Leaf.Remotes) != 1 || vz.Leaf.Remotes[0].URLs[0] != hub.LeafURL() ||
		vz.Leaf.Remotes[0].LocalAccount != "$G" || !contains(vz.Leaf.Remotes[0].Deny.Exports, "secret.>") {
		t.Fatalf("/varz leaf fields: %+v", vz)
	}

	// Shutdown closes the link first: the hub loses the gateway's interest.
	sctx, scancel := context.WithTimeout(context.Background(), testTimeout)
	defer scancel()
	require.NoError(t, a.Shutdown(sctx))
	require.DeepEqual(t, link.Status().State, leaf.StateClosed)
}

func natsConnect(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.Timeout(testTimeout))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

func nextMsg(t *testing.T, sub *nats.Subscription) *nats.Msg {
	t.Helper()
	m, err := sub.NextMsg(testTimeout)
	if err != nil {
		t.Fatalf("next message on %s: %v", sub.Subject, err)
	}
	return m
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	client := &http.Client{Timeout: testTimeout}
	resp, err := client.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestAppLameDuckClosesLinksFirst(t *testing.T) {
	c := loopbackConfig(t, "http_port: 0\nlame_duck_duration: 200ms\nlame_duck_grace_period: 10ms\n"+
		"leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n", tempEnv(t))
	a, err := Build(c, Flags{})
	require.NoError(t, err)
	require.NoError(t, a.Start())
	require.DeepEqual(t, a.node.Link(0).Status().State, leaf.StateConnecting) // nothing listens on port 1
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, a.LameDuck(ctx))
	require.DeepEqual(t, a.node.Link(0).Status().State, leaf.StateClosed)
	require.NoError(t, a.Shutdown(ctx)) // harmless afterwards
}

// The loop-prevention denies the leaf runtime adds to each remote's link,
// from the uplinks and downlinks of a configuration (leaf/node composes
// them; config.Config.LeafConfig has only the remote's own).
func TestValidateLoopDenies(t *testing.T) {
	const remote = "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"
	// Hub and local subjects arrive only through the downlink (another
	// site's cmd.site2.x never reaches a local cmd.> subscriber), and the
	// local ones never go back up.
	c := mustValidate(t, "server_name: gw.1\n"+remote+
		"downlinks: [{name: cmds, stream: CMDS, filter_subjects: [cmd.site1.>], hub_subject_prefix: cmd.site1., local_subject_prefix: cmd.}]\n")
	lc := linkConfig(t, c, 0)
	require.DeepEqual(t, lc.DenyImports, []string{"cmd.site1.>", "cmd.>"})
	require.DeepEqual(t, lc.DenyExports, []string{"cmd.>"})
	// What uplinks capture reaches the hub only through them.
	c = mustValidate(t, remote+"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., max_msgs: 10, discard: new}]\n")
	if got := linkConfig(t, c, 0).DenyExports; len(got) != 1 || got[0] != "telemetry.>" {
		t.Fatalf("captured subjects not denied to plain routing: %q", got)
	}
}
