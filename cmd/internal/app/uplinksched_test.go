package app

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/leafbox/leafbox/leaf/node"
)

// TestUplinkPriorityAndRateCap runs a gateway with two uplinks toward a
// real nats-server hub: an alarms uplink of a higher priority and a bulk
// telemetry uplink, both with a backlog built while the hub was down, and
// a total rate cap. When the hub comes back the alarms reach the hub
// stream before the bulk backlog, and the drain holds the cap within 20%.
func TestUplinkPriorityAndRateCap(t *testing.T) {
	const (
		nAlarms        = 60
		nBulk          = 240
		payload        = 1000
		rateCap        = 150_000 // bytes/s: ~2 s for the ~320 KB below
		maxInterleaved = 2       // bulk messages the hub may store among the alarms
	)
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, hjs, _ := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-sched"}, "",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}})
	hjs.Conn().Close()
	hub.Kill()

	a := startGateway(t, "http_port: -1\nserver_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		fmt.Sprintf("uplink_limits: {max_rate: %d}\n", rateCap)+
		"uplinks:\n"+
		"  - {name: bulk, subjects: [bulk.>], hub_subject_prefix: site1., stream: SITE, drain_jitter: 0s}\n"+
		"  - {name: alarms, subjects: [alarm.>], hub_subject_prefix: site1., stream: SITE, priority: 10, drain_jitter: 0s}\n", Flags{})

	gw := natsConnect(t, "nats://"+a.Addr().String())
	data := make([]byte, payload)
	for i := range nBulk { // the bulk backlog is the older one
		require.NoError(t, gw.Publish(fmt.Sprintf("bulk.b%d", i%3), data))
	}
	for i := range nAlarms {
		require.NoError(t, gw.Publish(fmt.Sprintf("alarm.a%d", i%3), data))
	}
	require.NoError(t, gw.Flush())

	hub.Restart()
	_, stream := hubJetStream(t, ctx, hub, "SITE")
	awaitStreamMsgs(t, ctx, stream, nAlarms+nBulk, func() string { return fmt.Sprintf("uplinks %+v", a.UplinkStatus()) })

	// Order on the hub: once the alarms uplink is ready (its first
	// message is stored), its backlog goes before the bulk one: at most
	// the bulk message holding the turn at that moment interleaves. Bulk
	// messages before the first alarm were sent while only the bulk
	// uplink was ready.
	var first, last time.Time
	firstAlarm, lastAlarm := uint64(0), uint64(0)
	kinds := make([]string, nAlarms+nBulk+1)
	for seq := uint64(1); seq <= nAlarms+nBulk; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		require.NoError(t, err)
		if seq == 1 {
			first = m.Time
		}
		last = m.Time
		kinds[seq] = m.Subject
		if strings.HasPrefix(m.Subject, "site1.alarm.") {
			lastAlarm = seq
			if firstAlarm == 0 {
				firstAlarm = seq
			}
		}
	}
	interleaved := 0
	for seq := firstAlarm; seq <= lastAlarm; seq++ {
		if strings.HasPrefix(kinds[seq], "site1.bulk.") {
			interleaved++
		}
	}
	t.Logf("alarms at hub seqs %d..%d, %d bulk messages among them", firstAlarm, lastAlarm, interleaved)
	if interleaved > maxInterleaved {
		t.Fatalf("%d bulk messages interleaved with the alarms (hub seqs %d..%d)", interleaved, firstAlarm, lastAlarm)
	}

	// Rate: the bytes the scheduler charged over the hub's storage times.
	var acked uint64
	sts := a.UplinkStatus()
	for _, st := range sts {
		acked += st.AckedBytes
		if st.BacklogMsgs != 0 || len(st.Dropped) != 0 || st.StreamResets != 0 {
			t.Fatalf("uplink %s: %+v", st.Name, st.Status)
		}
	}
	span := last.Sub(first).Seconds()
	perMsg := float64(acked) / float64(nAlarms+nBulk)
	got := (float64(acked) - perMsg) / span
	t.Logf("drained %d bytes in %.2fs: %.0f B/s against a cap of %d B/s", acked, span, got, rateCap)
	if got < 0.8*rateCap || got > 1.2*rateCap {
		t.Fatalf("drain rate %.0f B/s, cap %d B/s", got, rateCap)
	}
	var uz monitor.Uplinkz
	getJSON(t, "http://"+a.MonitorAddr().String()+"/uplinkz", &uz)
	if uz.Limits == nil || uz.Limits.MaxRate != rateCap || uz.Limits.BudgetUsed < int64(acked) {
		t.Fatalf("/uplinkz limits %+v, acked %d", uz.Limits, acked)
	}
	for _, u := range uz.Uplinks {
		if u.AckedBytes == 0 || (u.Name == "alarms" && u.Priority != 10) || u.BudgetUsed == 0 {
			t.Fatalf("/uplinkz entry %+v", u)
		}
	}
}

// TestUplinkDetectsRecreatedStream: the hub stream is deleted and created
// again while the gateway forwards; the uplink counts the reset from the
// PubAck sequences and keeps forwarding into the new stream.
func TestUplinkDetectsRecreatedStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	cfg := jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}}
	hub, js, _ := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-reset"}, "", cfg)

	a := startGateway(t, "http_port: -1\nserver_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [tel.>], hub_subject_prefix: site1., stream: SITE}]\n", Flags{})
	gw := natsConnect(t, "nats://"+a.Addr().String())
	waitAcked := func(want uint64) node.UplinkStatus {
		t.Helper()
		return awaitUplinkAcked(t, ctx, a, want)
	}
	for i := range 5 {
		require.NoError(t, gw.Publish("tel.x", []byte{byte(i)}))
	}
	require.NoError(t, gw.Flush())
	if st := waitAcked(5); st.HubSeq != 5 || st.StreamResets != 0 {
		t.Fatalf("before the reset: %+v", st)
	}

	require.NoError(t, js.DeleteStream(ctx, "SITE"))
	_, err := js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	for i := range 3 {
		require.NoError(t, gw.Publish("tel.x", []byte{byte(i)}))
	}
	require.NoError(t, gw.Flush())
	st := waitAcked(8)
	if st.StreamResets != 1 || st.HubSeq != 3 || st.HubStream != "SITE" {
		t.Fatalf("after the reset: %+v", st)
	}
	info, err := js.Stream(ctx, "SITE")
	require.NoError(t, err)
	if got := info.CachedInfo().State.Msgs; got != 3 {
		t.Fatalf("new stream holds %d messages", got)
	}
}
