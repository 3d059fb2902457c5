package app

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/leafbox/leafbox/leaf/node"
)

// downlinkHub starts a nats-server hub with JetStream in domain "hub" and
// a file stream CMDS on cmd.>, and returns it with a JetStream context on
// a client connection.
func downlinkHub(t *testing.T, ctx context.Context) (*leaftest.Hub, jetstream.JetStream) {
	t.Helper()
	hub, js, _ := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-js"}, "hub",
		jetstream.StreamConfig{Name: "CMDS", Subjects: []string{"cmd.>"}})
	return hub, js
}

// waitFor is awaitCond for a condition that has no state to report.
func waitFor(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	awaitCond(t, ctx, what, func() (bool, string) { return cond(), "" })
}

// TestDownlinkDeliversOfflineCommands runs a gateway App with a downlink
// from a real nats-server hub stream. Commands stored on the hub before
// the gateway exists, and while no local subscriber listens (each such
// delivery fails and the hub sends it again), reach the local subscriber
// once it subscribes: in order, each once, on the mapped subject. A
// gateway restart resumes from the durable consumer's position without
// sending acked commands again, and the downlink survives a hub restart.
func TestDownlinkDeliversOfflineCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*testTimeout)
	defer cancel()
	hub, hjs := downlinkHub(t, ctx)
	publish := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			_, err := hjs.Publish(ctx, "cmd.site1.door"+strconv.Itoa(i%3), []byte(strconv.Itoa(i)))
			require.NoError(t, err)
		}
	}
	publish(0, 20) // before the gateway exists

	c := gatewayConfig(t, "http_port: -1\nserver_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"downlinks: [{name: cmds, stream: CMDS, filter_subjects: [cmd.site1.>], hub_subject_prefix: cmd.site1.,"+
		" local_subject_prefix: cmd., batch: 10, ack_wait: 2s, expires: 2s}]\n")
	start := func() *App {
		t.Helper()
		return startConfig(t, c, Flags{Logger: slog.New(slog.NewTextHandler(t.Output(), nil))})
	}
	status := func(a *App) node.DownlinkStatus {
		sts := a.DownlinkStatus()
		if len(sts) != 1 {
			t.Fatalf("DownlinkStatus: %+v", sts)
		}
		return sts[0]
	}
	// expect reads the commands from..to-1 from sub, in order.
	expect := func(sub *nats.Subscription, from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			m := nextMsg(t, sub)
			if string(m.Data) != strconv.Itoa(i) || m.Subject != "cmd.door"+strconv.Itoa(i%3) {
				t.Fatalf("local subscriber got %q on %s, want command %d on cmd.door%d", m.Data, m.Subject, i, i%3)
			}
		}
	}
	// settled waits until the hub consumer has nothing outstanding and
	// every delivery's ack was confirmed, then requires that the
	// subscriber got nothing more.
	settled := func(a *App, sub *nats.Subscription, delivered uint64) {
		t.Helper()
		cons, err := hjs.Consumer(ctx, "CMDS", "gw1_cmds")
		require.NoError(t, err)
		waitFor(t, ctx, "the hub consumer to settle", func() bool {
			info, err := cons.Info(ctx)
			require.NoError(t, err)
			st := status(a)
			return info.NumAckPending == 0 && info.NumPending == 0 && st.Acked == delivered && st.Delivered == delivered
		})
		if n, _, err := sub.Pending(); err != nil || n != 0 {
			t.Fatalf("%d extra deliveries (%v)", n, err)
		}
		require.NoError(t, sub.Unsubscribe())
	}

	a := start()
	// Nobody listens on the gateway yet: deliveries fail and are left to
	// the hub.
	waitFor(t, ctx, "failed local deliveries", func() bool { return status(a).Failed >= 2 })
	if st := status(a); st.Delivered != 0 || st.LinkState != "connected" || st.LastError == "" {
		t.Fatalf("before a local subscriber: %+v", st)
	}
	gw := natsConnect(t, "nats://"+a.Addr().String())
	sub, err := gw.SubscribeSync("cmd.>")
	require.NoError(t, err)
	require.NoError(t, gw.Flush())
	expect(sub, 0, 20)
	publish(20, 30) // live
	expect(sub, 20, 30)
	settled(a, sub, 30)
	if st := status(a); st.Redelivered == 0 || st.LastSeq != 30 {
		t.Fatalf("after delivery: %+v", st)
	}
	var metrics strings.Builder
	a.node.WriteMetrics(monitor.NewMetricWriter(&metrics))
	for _, want := range []string{"# TYPE leafbox_downlink_delivered_total counter\n", `leafbox_downlink_delivered_total{downlink="cmds"} 30`,
		`leafbox_downlink_acked_total{downlink="cmds"} 30`, `leafbox_downlink_resends_total{downlink="cmds"} `, `leafbox_downlink_pending_messages{downlink="cmds"} 0`} {
		if !strings.Contains(metrics.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, metrics.String())
		}
	}
	var uz monitor.Uplinkz
	getJSON(t, "http://"+a.MonitorAddr().String()+"/uplinkz", &uz)
	if len(uz.Downlinks) != 1 || uz.Downlinks[0].Name != "cmds" || uz.Downlinks[0].Delivered != 30 ||
		uz.Downlinks[0].Durable != "gw1_cmds" || uz.Downlinks[0].LinkState != "connected" {
		t.Fatalf("/uplinkz downlinks: %+v", uz.Downlinks)
	}

	// Gateway restart: commands sent meanwhile arrive, acked ones do not
	// come again.
	sctx, scancel := context.WithTimeout(ctx, testTimeout)
	require.NoError(t, a.Shutdown(sctx))
	scancel()
	publish(30, 40)
	a = start()
	gw = natsConnect(t, "nats://"+a.Addr().String())
	sub, err = gw.SubscribeSync("cmd.>")
	require.NoError(t, err)
	require.NoError(t, gw.Flush())
	expect(sub, 30, 40)

	// Hub restart: the downlink binds its consumer again and goes on.
	hub.Kill()
	waitFor(t, ctx, "the link to drop", func() bool { return status(a).LinkState != "connected" })
	hub.Restart()
	hjs, err = jetstream.New(natsConnect(t, hub.ClientURL()))
	require.NoError(t, err)
	publish(40, 50)
	expect(sub, 40, 50)
	settled(a, sub, 20)
	t.Logf("after the hub restart: %+v", status(a))
}

// TestDownlinkIntoLocalStream delivers hub commands into a local
// JetStream stream: each is acked to the hub only after the local
// stream's PubAck. While the local stream is full (max_msgs, discard
// new), deliveries fail and the hub sends them again; once it has room
// they are stored, in hub order even with several messages outstanding,
// each once, with the downlink's Nats-Msg-Id and without the hub
// publisher's Nats-Expected-Stream.
func TestDownlinkIntoLocalStream(t *testing.T) {
	const n = 12
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, hjs := downlinkHub(t, ctx)
	for i := range n {
		// The hub publisher's expectation is for the hub stream; the
		// local one must not apply it.
		_, err := hjs.Publish(ctx, "cmd.site1.valve"+strconv.Itoa(i%2), []byte(strconv.Itoa(i)), jetstream.WithExpectStream("CMDS"))
		require.NoError(t, err)
	}

	dir := t.TempDir()
	a := startApp(t, fmt.Sprintf("http_port: 0\nserver_name: gw2\njetstream: {store_dir: %q, domain: edge}\n", dir)+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"downlinks: [{name: cmds, stream: CMDS, filter_subjects: [cmd.site1.>], hub_subject_prefix: cmd.site1.,"+
		" local_subject_prefix: cmd., max_ack_pending: 4, ack_wait: 2s, expires: 2s}]\n", Flags{})
	gw := natsConnect(t, "nats://"+a.Addr().String())
	ljs, err := jetstream.New(gw)
	require.NoError(t, err)
	cfg := jetstream.StreamConfig{Name: "LOCAL", Subjects: []string{"cmd.>"}, MaxMsgs: 5, Discard: jetstream.DiscardNew}
	local, err := ljs.CreateStream(ctx, cfg)
	require.NoError(t, err)
	status := func() node.DownlinkStatus { return a.DownlinkStatus()[0] }
	waitFor(t, ctx, "the full local stream to refuse deliveries", func() bool {
		st := status()
		return st.Delivered == 5 && strings.Contains(st.LastError, "maximum messages exceeded")
	})
	info, err := local.Info(ctx)
	require.NoError(t, err)
	if st := status(); info.State.Msgs != 5 || st.Delivered != 5 {
		t.Fatalf("with room for 5: stream holds %d, downlink %+v", info.State.Msgs, st)
	}
	cfg.MaxMsgs = -1
	_, err = ljs.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	waitFor(t, ctx, "every command stored locally", func() bool {
		info, err := local.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs >= n && status().Acked == n
	})
	info, err = local.Info(ctx)
	require.NoError(t, err)
	if info.State.Msgs != n {
		t.Fatalf("local stream holds %d, want %d", info.State.Msgs, n)
	}
	for i := range n {
		m, err := local.GetMsg(ctx, uint64(i+1))
		require.NoError(t, err)
		if string(m.Data) != strconv.Itoa(i) || m.Subject != "cmd.valve"+strconv.Itoa(i%2) ||
			m.Header.Get(nats.MsgIdHdr) != "cmds.CMDS."+strconv.Itoa(i+1) {
			t.Fatalf("local seq %d: %s %q %v, want command %d", i+1, m.Subject, m.Data, m.Header, i)
		}
	}
	cons, err := hjs.Consumer(ctx, "CMDS", "gw2_cmds")
	require.NoError(t, err)
	ci, err := cons.Info(ctx)
	require.NoError(t, err)
	if ci.NumAckPending != 0 || ci.NumPending != 0 || ci.AckFloor.Stream != n {
		t.Fatalf("hub consumer: ack pending %d, pending %d, ack floor %d", ci.NumAckPending, ci.NumPending, ci.AckFloor.Stream)
	}
	t.Logf("downlink: %+v", status())
}

// With max_deliver, a command that always fails locally (too large for
// the local stream) is given up by the hub after that many deliveries,
// counted as skipped, and the ones after it are delivered in order.
func TestDownlinkMaxDeliverSkipsPoisonCommand(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, hjs := downlinkHub(t, ctx)
	payload := func(i int) []byte {
		if i == 2 {
			return []byte(strings.Repeat("x", 200))
		}
		return []byte(strconv.Itoa(i))
	}
	for i := range 5 {
		_, err := hjs.Publish(ctx, "cmd.site1.c", payload(i))
		require.NoError(t, err)
	}
	a := startApp(t, fmt.Sprintf("http_port: 0\nserver_name: gw4\njetstream: {store_dir: %q}\n", t.TempDir())+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"downlinks: [{name: cmds, stream: CMDS, filter_subjects: [cmd.site1.>], hub_subject_prefix: cmd.site1.,"+
		" local_subject_prefix: cmd., max_deliver: 3, ack_wait: 2s, expires: 2s}]\n", Flags{})
	ljs, err := jetstream.New(natsConnect(t, "nats://"+a.Addr().String()))
	require.NoError(t, err)
	local, err := ljs.CreateStream(ctx, jetstream.StreamConfig{Name: "LOCAL", Subjects: []string{"cmd.>"}, MaxMsgSize: 100})
	require.NoError(t, err)
	waitFor(t, ctx, "the commands after the poison one", func() bool {
		info, err := local.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs == 4
	})
	for i, want := range []int{0, 1, 3, 4} {
		m, err := local.GetMsg(ctx, uint64(i+1))
		require.NoError(t, err)
		require.DeepEqual(t, string(m.Data), strconv.Itoa(want))
	}
	waitFor(t, ctx, "four deliveries", func() bool { return a.DownlinkStatus()[0].Delivered == 4 })
	if st := a.DownlinkStatus()[0]; st.Skipped != 1 || !strings.Contains(st.LastError, "hub seq 3") {
		t.Fatalf("status %+v", st)
	}
}
