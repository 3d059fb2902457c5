//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// End-to-end tests of the leaf node uplink: the real binary connects to a
// real nats-server hub (leaftest.StartHub), and nats.go clients on both
// sides check that interest and messages cross the link.

// leafzEntry is one entry of /leafz.
type leafzEntry struct {
	Name    string   `json:"name"`
	IsSpoke bool     `json:"is_spoke"`
	Account string   `json:"account"`
	IP      string   `json:"ip"`
	Port    int      `json:"port"`
	InMsgs  int64    `json:"in_msgs"`
	OutMsgs int64    `json:"out_msgs"`
	NumSubs int      `json:"subscriptions"`
	Subs    []string `json:"subscriptions_list"`
}

// waitLeafz polls mon's /leafz?subs=1 until it lists one link for which
// cond holds, and returns that entry.
func waitLeafz(t *testing.T, mon string, cond func(leafzEntry) bool) leafzEntry {
	t.Helper()
	deadline := time.After(waitTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var body string
	for {
		body = get(t, mon+"/leafz?subs=1")
		var lz struct {
			Leafs []leafzEntry `json:"leafs"`
		}
		if err := json.Unmarshal([]byte(body), &lz); err != nil {
			t.Fatalf("/leafz: %v\n%s", err, body)
		}
		if len(lz.Leafs) == 1 && cond(lz.Leafs[0]) {
			return lz.Leafs[0]
		}
		select {
		case <-deadline:
			t.Fatalf("/leafz did not show the link within %v:\n%s", waitTimeout, body)
		case <-tick.C:
		}
	}
}

// natsConnect opens a nats.go connection closed in t.Cleanup.
func natsConnect(t *testing.T, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.Timeout(waitTimeout))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func nextMsg(t *testing.T, sub *nats.Subscription) *nats.Msg {
	t.Helper()
	m, err := sub.NextMsg(waitTimeout)
	if err != nil {
		t.Fatalf("next message on %s: %v", sub.Subject, err)
	}
	return m
}

// uplink is a running leafbox with a link to a hub, and a client on each
// side.
type uplink struct {
	t      *testing.T
	p      *proc
	mon    string     // the gateway's monitoring URL
	gw, hc *nats.Conn // clients of the gateway and of the hub
}

// flushSubject is answered on the hub by every uplink; see flush.
const flushSubject = "e2e.flush"

// connectUplink connects clients to the gateway p and to hub, and waits
// until the link is up and carries the hub's interest in flushSubject.
func connectUplink(t *testing.T, p *proc, portsDir string, hub *leaftest.Hub) *uplink {
	t.Helper()
	pf, _ := p.waitPorts(portsDir)
	u := &uplink{
		t:   t,
		p:   p,
		mon: loopbackURL(t, pf.Monitoring).String(),
		gw:  natsConnect(t, loopbackURL(t, pf.Nats).String()),
		hc:  natsConnect(t, hub.ClientURL()),
	}
	_, err := u.hc.Subscribe(flushSubject, func(m *nats.Msg) { _ = m.Respond(nil) })
	require.NoError(t, err)
	require.NoError(t, u.hc.Flush())
	waitLeafz(t, u.mon, func(l leafzEntry) bool { return slices.Contains(l.Subs, flushSubject) })
	return u
}

// flush waits until every subscription made so far on either side has
// crossed the link. The gateway's request to the hub travels behind the
// interest the gateway queued for the hub before it, and the hub's reply
// behind the interest the hub queued for the gateway before it: a PING
// and PONG through the link, made of messages.
func (u *uplink) flush() {
	u.t.Helper()
	require.NoError(u.t, u.gw.Flush())
	require.NoError(u.t, u.hc.Flush())
	if _, err := u.gw.Request(flushSubject, nil, waitTimeout); err != nil {
		u.t.Fatalf("flush through the link: %v", err)
	}
}

// stop stops leafbox with SIGTERM and checks its exit code.
func (u *uplink) stop() {
	u.t.Helper()
	u.p.signal(syscall.SIGTERM)
	if code := u.p.wait(); code != 0 {
		u.t.Fatalf("exit code %d after SIGTERM; log:\n%s", code, u.p.log())
	}
}

// pubSubBothWays checks plain messages in both directions.
func (u *uplink) pubSubBothWays() {
	t := u.t
	t.Helper()
	up, err := u.hc.SubscribeSync("telemetry.>")
	require.NoError(t, err)
	down, err := u.gw.SubscribeSync("cmd.gw.>")
	require.NoError(t, err)
	u.flush()

	require.NoError(t, u.gw.Publish("telemetry.temp", []byte(`{"c":21.5}`)))
	if m := nextMsg(t, up); m.Subject != "telemetry.temp" || string(m.Data) != `{"c":21.5}` {
		t.Fatalf("hub got %q %q", m.Subject, m.Data)
	}
	require.NoError(t, u.hc.Publish("cmd.gw.reboot", []byte("now")))
	if m := nextMsg(t, down); m.Subject != "cmd.gw.reboot" || string(m.Data) != "now" {
		t.Fatalf("gateway got %q %q", m.Subject, m.Data)
	}
}

func TestRunLeafRemoteFlag(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{Name: "hub-e2e"})
	dir := t.TempDir()
	remote := fmt.Sprintf("nats://127.0.0.1:%d", hub.LeafPort)
	p := start(t, "run", "--addr", "127.0.0.1", "--port", "-1", "--http-port", "-1", "--ports-file-dir", dir,
		"--jetstream=false", "--server-name", "gw-e2e", "--leaf-remote", remote)
	u := connectUplink(t, p, dir, hub)

	u.pubSubBothWays()

	// Request-reply, gateway → hub and hub → gateway.
	_, err := u.hc.Subscribe("hub.time", func(m *nats.Msg) { _ = m.Respond([]byte("noon")) })
	require.NoError(t, err)
	_, err = u.gw.Subscribe("gw.status", func(m *nats.Msg) { _ = m.Respond([]byte("ok")) })
	require.NoError(t, err)
	u.flush()
	reply, err := u.gw.Request("hub.time", nil, waitTimeout)
	require.NoError(t, err)
	if string(reply.Data) != "noon" {
		t.Fatalf("gateway's request answered %q", reply.Data)
	}
	reply, err = u.hc.Request("gw.status", nil, waitTimeout)
	require.NoError(t, err)
	if string(reply.Data) != "ok" {
		t.Fatalf("hub's request answered %q", reply.Data)
	}

	// /leafz describes the link; /varz counts it and lists the remote.
	l := waitLeafz(t, u.mon, func(l leafzEntry) bool { return slices.Contains(l.Subs, "hub.time") })
	if l.Name != "hub-e2e" || !l.IsSpoke || l.Account != "$G" || l.IP != "127.0.0.1" || l.Port != hub.LeafPort ||
		l.InMsgs < 3 || l.OutMsgs < 3 || l.NumSubs < 3 || !slices.Contains(l.Subs, "telemetry.>") {
		t.Fatalf("/leafz entry: %+v", l)
	}
	var vz struct {
		Leafs int `json:"leafnodes"`
		Leaf  struct {
			Remotes []struct {
				URLs []string `json:"urls"`
			} `json:"remotes"`
		} `json:"leaf"`
	}
	body := get(t, u.mon+"/varz")
	require.NoError(t, json.Unmarshal([]byte(body), &vz))
	if vz.Leafs != 1 || len(vz.Leaf.Remotes) != 1 || !slices.Equal(vz.Leaf.Remotes[0].URLs, []string{remote}) {
		t.Fatalf("/varz leaf fields: %s", body)
	}

	u.stop()
	if !strings.Contains(p.log(), "leaf: connected") {
		t.Fatalf("no connection in the log:\n%s", p.log())
	}
}

func TestRunLeafRemoteFromConfigWithNkey(t *testing.T) {
	kp, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	seed, err := kp.Seed()
	require.NoError(t, err)
	hub := leaftest.StartHub(t, leaftest.HubOptions{Leaf: fmt.Sprintf("authorization { nkey: %q }", pub)})

	// The seed file is named relative to the configuration file, which is
	// not in leafbox's working directory.
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "secrets"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "secrets", "gw.nk"), append(seed, '\n'), 0o600))
	cfg := filepath.Join(dir, "leafbox.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `server_name: gw-nkey
listen: 127.0.0.1
port: -1
http_port: -1
jetstream: false
leafnodes:
  remotes:
    - url: nats-leaf://127.0.0.1:%d
      nkey: secrets/gw.nk
      deny_exports: ["secret.>"]
`, hub.LeafPort), 0o600))

	out, err := exec.Command(binary, "config", "check", cfg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "1 leafnode remote") {
		t.Fatalf("config check: %v\n%s", err, out)
	}

	p := start(t, "run", "--config", cfg, "--ports-file-dir", dir)
	u := connectUplink(t, p, dir, hub)
	u.pubSubBothWays()

	// deny_exports keeps secret.> on the gateway, whatever the hub wants.
	secret, err := u.hc.SubscribeSync("secret.>")
	require.NoError(t, err)
	after, err := u.hc.SubscribeSync("after.secret")
	require.NoError(t, err)
	u.flush()
	require.NoError(t, u.gw.Publish("secret.key", []byte("x")))
	require.NoError(t, u.gw.Publish("after.secret", nil))
	nextMsg(t, after) // sent behind secret.key, had it crossed
	if n, _, _ := secret.Pending(); n != 0 {
		t.Fatal("a denied export reached the hub")
	}

	u.stop()
	if strings.Contains(p.log(), string(seed)) {
		t.Fatal("the log shows the seed")
	}
}
