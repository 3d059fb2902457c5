package app

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestUplinkStoreAndForward runs a gateway App with an uplink toward a real
// nats-server hub with JetStream. Messages published while the hub is down
// are accepted (durable once the publisher's PING is answered), delivered
// to local subscribers live, and reach the hub stream after it comes back:
// each exactly once, in order, and never through plain interest routing.
func TestUplinkStoreAndForward(t *testing.T) {
	const n = 500
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, hjs, _ := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-js"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}, Duplicates: 10 * time.Minute})
	hjs.Conn().Close()
	hub.Kill()

	c := gatewayConfig(t, "http_port: -1\nserver_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE}]\n")
	a := startConfig(t, c, Flags{})

	gw := natsConnect(t, "nats://"+a.Addr().String())
	local, err := gw.SubscribeSync("telemetry.>")
	require.NoError(t, err)
	require.NoError(t, gw.Flush())
	publish := func(from, to int) {
		t.Helper()
		gw := natsConnect(t, "nats://"+a.Addr().String())
		defer gw.Close()
		for i := from; i < to; i++ {
			require.NoError(t, gw.Publish("telemetry.t"+strconv.Itoa(i%7), []byte(strconv.Itoa(i))))
		}
		require.NoError(t, gw.Flush()) // PONG: every message is in the outbox
	}
	publish(0, n)
	if st := a.UplinkStatus()[0]; st.BacklogMsgs != n || st.Stored != n || st.Acked != 0 || st.LinkState == "connected" {
		t.Fatalf("with the hub down: %+v", st)
	}
	var uz monitor.Uplinkz
	getJSON(t, "http://"+a.MonitorAddr().String()+"/uplinkz", &uz)
	if uz.NumUplinks != 1 || len(uz.Uplinks) != 1 {
		t.Fatalf("/uplinkz: %+v", uz)
	}
	if u := uz.Uplinks[0]; u.Name != "tel" || u.BacklogMsgs != n || u.Captured != n || u.BacklogBytes == 0 ||
		u.OldestAgeSeconds <= 0 || u.LinkState == "connected" || u.State == "" {
		t.Fatalf("/uplinkz entry with the hub down: %+v", u)
	}
	for i := range n { // local subscribers got every message live
		if m := nextMsg(t, local); string(m.Data) != strconv.Itoa(i) {
			t.Fatalf("local subscriber got %q, want %d", m.Data, i)
		}
	}

	hub.Restart()
	hjs, stream := hubJetStream(t, ctx, hub, "SITE")
	hc := hjs.Conn()
	plain, err := hc.SubscribeSync("telemetry.>") // plain routing would feed it
	require.NoError(t, err)
	require.NoError(t, hc.Flush())

	waitStream := func(want uint64) {
		t.Helper()
		awaitStreamMsgs(t, ctx, stream, want, func() string { return fmt.Sprintf("uplink %+v", a.UplinkStatus()[0]) })
	}
	waitStream(n)

	// Live traffic while connected takes the same path.
	link := a.node.Link(0)
	require.NoError(t, link.WaitConnected(ctx))
	publish(n, n+100)
	waitStream(n + 100)
	require.NoError(t, link.Flush(ctx))
	require.NoError(t, hc.Flush())
	if got, _, _ := plain.Pending(); got != 0 {
		t.Fatalf("%d captured messages reached the hub by plain routing", got)
	}

	// A gateway restart with a backlog: the new process resumes from its
	// outbox.
	hub.Kill()
	publish(n+100, n+300)
	sctx, scancel := context.WithTimeout(ctx, testTimeout)
	require.NoError(t, a.Shutdown(sctx))
	scancel()
	a = startConfig(t, c, Flags{})
	// The 200 new messages, and any earlier ones whose PubAck had not
	// come back before the hub went down: the hub stored those already,
	// and its duplicate window drops their second copy.
	backlog := a.UplinkStatus()[0].BacklogMsgs
	t.Logf("outbox backlog after restart: %d", backlog)
	if backlog < 200 || backlog > 300 {
		t.Fatalf("after restart the outbox holds %d, want 200 to 300", backlog)
	}
	hub.Restart()
	_, stream = hubJetStream(t, ctx, hub, "SITE")
	waitStream(n + 300)

	// Exactly once and in order: hub sequence i+1 holds message i.
	ids := map[string]bool{}
	for i := range n + 300 {
		m, err := stream.GetMsg(ctx, uint64(i+1))
		require.NoError(t, err)
		if string(m.Data) != strconv.Itoa(i) || m.Subject != "site1.telemetry.t"+strconv.Itoa(i%7) {
			t.Fatalf("hub seq %d: %q %q, want message %d", i+1, m.Subject, m.Data, i)
		}
		// <server>.<uplink>.<epoch>.<n>: fixed at capture, once per message.
		id := m.Header.Get(nats.MsgIdHdr)
		if !strings.HasPrefix(id, "gw1.tel.") || len(strings.Split(id, ".")) != 4 || ids[id] {
			t.Fatalf("hub seq %d: Nats-Msg-Id %q", i+1, id)
		}
		ids[id] = true
	}
	st := awaitUplinkAcked(t, ctx, a, backlog)
	if len(st.Dropped) != 0 || st.WrongStream != 0 {
		t.Fatalf("uplink status %+v", st)
	}
}
