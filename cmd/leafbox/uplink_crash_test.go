//go:build unix

package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// uplinkzEntry is the part of an /uplinkz entry the crash test reads.
type uplinkzEntry struct {
	Name         string            `json:"name"`
	LinkState    string            `json:"link_state"`
	Acked        uint64            `json:"acked"`
	Dropped      map[string]uint64 `json:"dropped"`
	WrongStream  uint64            `json:"wrong_stream"`
	InFlight     int               `json:"in_flight"`
	BacklogMsgs  uint64            `json:"backlog_msgs"`
	BacklogBytes uint64            `json:"backlog_bytes"`
}

// getUplinkz fetches mon's /uplinkz and returns its single entry.
func getUplinkz(t *testing.T, mon string) uplinkzEntry {
	t.Helper()
	body := get(t, mon+"/uplinkz")
	var uz struct {
		Uplinks []uplinkzEntry `json:"uplinks"`
	}
	if err := json.Unmarshal([]byte(body), &uz); err != nil || len(uz.Uplinks) != 1 {
		t.Fatalf("/uplinkz: %v\n%s", err, body)
	}
	return uz.Uplinks[0]
}

// waitUplinkz polls mon's /uplinkz until cond holds for its entry.
func waitUplinkz(t *testing.T, mon string, cond func(uplinkzEntry) bool) uplinkzEntry {
	t.Helper()
	deadline := time.After(waitTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		u := getUplinkz(t, mon)
		if cond(u) {
			return u
		}
		select {
		case <-deadline:
			t.Fatalf("/uplinkz did not reach the expected state within %v: %+v", waitTimeout, u)
		case <-tick.C:
		}
	}
}

// TestUplinkSurvivesKill9 kills the gateway with SIGKILL while its uplink
// forwards a backlog to a real hub, and restarts it on the same outbox:
// every message whose publisher's flush returned (accepted, so durable in
// the outbox) must reach the hub stream exactly once, in publish order.
// Messages the hub stored but whose PubAck the dead process never
// recorded are sent again and dropped by the hub's duplicate window.
func TestUplinkSurvivesKill9(t *testing.T) {
	uplinkSurvivesKill9(t, "server_name: gw1\n")
}

// TestUplinkSurvivesKill9WithoutServerName is TestUplinkSurvivesKill9 for
// a gateway without server_name: its name, and so the prefix of its
// Nats-Msg-Ids, comes from the identity it generated at its first start,
// the same after the restart. With a name that changes on every start
// (the random server id) the resent messages carry new ids and the hub
// stores them twice.
func TestUplinkSurvivesKill9WithoutServerName(t *testing.T) {
	uplinkSurvivesKill9(t, "")
}

// varzIdentity is the part of /varz that names the gateway.
type varzIdentity struct {
	ServerID   string `json:"server_id"`
	ServerName string `json:"server_name"`
	PublicKey  string `json:"public_key"`
}

func getVarzIdentity(t *testing.T, mon string) varzIdentity {
	t.Helper()
	body := get(t, mon+"/varz")
	var v varzIdentity
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("/varz: %v\n%s", err, body)
	}
	return v
}

// uplinkSurvivesKill9 runs TestUplinkSurvivesKill9 with the server_name
// line serverName ("" for none).
func uplinkSurvivesKill9(t *testing.T, serverName string) {
	const (
		n     = 2000
		batch = 100
	)
	ctx := testContext(t)
	hub, _, stream := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-crash"}, jetstream.StreamConfig{
		Name: "SITE", Subjects: []string{"site1.>"}, Storage: jetstream.FileStorage, Duplicates: 10 * time.Minute,
	})
	hubMsgs := func() uint64 { return streamMsgs(t, ctx, stream) }

	dir := t.TempDir()
	cfg := writeUplinkConfigNamed(t, dir, hub.LeafURL(), serverName)

	p, gwURL := startJS(t, cfg, dir)
	pf, _ := p.waitPorts(dir)
	mon := loopbackURL(t, pf.Monitoring).String()
	waitUplinkz(t, mon, func(u uplinkzEntry) bool { return u.LinkState == "connected" })
	first := getVarzIdentity(t, mon)
	wantName := "gw1"
	if serverName == "" {
		wantName = first.ServerName
		if !strings.HasPrefix(wantName, "lb-") || !strings.HasPrefix(first.PublicKey, "N") || len(first.PublicKey) != 56 {
			t.Fatalf("/varz of a gateway without server_name: %+v", first)
		}
	}

	gw, err := nats.Connect(gwURL.String(), nats.Timeout(waitTimeout), nats.NoReconnect())
	require.NoError(t, err)
	defer gw.Close()
	for i := range n {
		require.NoError(t, gw.Publish("telemetry.t"+strconv.Itoa(i%7), []byte(strconv.Itoa(i))))
		if (i+1)%batch == 0 {
			require.NoError(t, gw.Flush()) // PONG: the batch is in the outbox
		}
	}
	// Every message is accepted; the forwarder is still working through
	// them. Kill the gateway mid-stream.
	require.NoError(t, p.cmd.Process.Kill())
	p.wait()
	gw.Close()
	atKill := hubMsgs()
	t.Logf("hub stream held %d of %d messages when the gateway died", atKill, n)

	p, _ = startJS(t, cfg, dir)
	pf, _ = p.waitPorts(dir)
	mon = loopbackURL(t, pf.Monitoring).String()
	t.Logf("outbox after restart: %+v", getUplinkz(t, mon))
	if again := getVarzIdentity(t, mon); again.ServerName != wantName || again.PublicKey != first.PublicKey || again.ServerID == first.ServerID {
		t.Fatalf("/varz after the restart %+v, before %+v: want the same server_name and public_key, a new server_id", again, first)
	}

	awaitHubMsgs(t, ctx, stream, n, p, mon)

	// Exactly once and in order: hub sequence i+1 holds message i.
	ids := map[string]bool{}
	for i := range n {
		m, err := stream.GetMsg(ctx, uint64(i+1))
		require.NoError(t, err)
		if string(m.Data) != strconv.Itoa(i) || m.Subject != "site1.telemetry.t"+strconv.Itoa(i%7) {
			t.Fatalf("hub seq %d: %q %q, want message %d", i+1, m.Subject, m.Data, i)
		}
		// <server>.<uplink>.<epoch>.<n>: fixed at capture, once per message.
		id := m.Header.Get(nats.MsgIdHdr)
		if !strings.HasPrefix(id, wantName+".tel.") || len(strings.Split(id, ".")) != 4 || ids[id] {
			t.Fatalf("hub seq %d: Nats-Msg-Id %q", i+1, id)
		}
		ids[id] = true
	}

	// The restarted gateway's outbox drains completely: the resent
	// duplicates are acknowledged too.
	u := waitUplinkz(t, mon, func(u uplinkzEntry) bool { return u.BacklogMsgs == 0 && u.InFlight == 0 })
	if u.BacklogBytes != 0 || len(u.Dropped) != 0 || u.WrongStream != 0 {
		t.Fatalf("/uplinkz at the end: %+v", u)
	}
	if got := hubMsgs(); got != n {
		t.Fatalf("hub stream holds %d messages after the drain, want %d", got, n)
	}
	stopJS(t, p)
}
