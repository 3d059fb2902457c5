package app

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/leafbox/leafbox/leaf/outbox"
)

// deadLetters returns the first uplink's dead-lettered messages.
func deadLetters(t testing.TB, a *App) []outbox.DeadLetter {
	t.Helper()
	list, err := a.node.Outbox(0).DeadLetters(0, 0)
	require.NoError(t, err)
	return list
}

// requireHubData fails unless stream holds exactly want, in order.
func requireHubData(t *testing.T, ctx context.Context, stream jetstream.Stream, want ...string) {
	t.Helper()
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	var got []string
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := stream.GetMsg(ctx, seq)
		require.NoError(t, err)
		got = append(got, string(m.Data))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("hub stream %s holds %q, want %q", info.Config.Name, got, want)
	}
}

// publishAll publishes subject/payload pairs and flushes: on the PONG
// every one is in the outbox.
func publishAll(t *testing.T, nc *nats.Conn, pairs ...string) {
	t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		require.NoError(t, nc.Publish(pairs[i], []byte(pairs[i+1])))
	}
	require.NoError(t, nc.Flush())
}

// TestUplinkPoisonMessageDeadLettered: a message whose subject no hub
// stream captures (a real nats-server hub in the JetStream domain "hub")
// is confirmed as such through $JS.hub.API.STREAM.NAMES, dead-lettered
// after dead_letter_after refusals with the reason in its headers, and
// the messages after it reach the hub in order. Before dead letters the
// uplink retried it forever and nothing after it arrived.
func TestUplinkPoisonMessageDeadLettered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, _, stream := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-poison"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.telemetry.>"}})
	a := startGateway(t, "server_name: gw1\nhttp_port: -1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>, other.>], hub_subject_prefix: site1., stream: SITE, hub_domain: hub,"+
		" drain_jitter: 0s, dead_letter_after: 2}]\n", Flags{})
	gw := natsConnect(t, "nats://"+a.Addr().String())
	publishAll(t, gw, "telemetry.a", "1", "other.x", "poison", "telemetry.b", "2", "telemetry.c", "3")
	state := func() string { return fmt.Sprintf("uplink %+v", a.UplinkStatus()[0]) }
	awaitStreamMsgs(t, ctx, stream, 3, state)
	requireHubData(t, ctx, stream, "1", "2", "3")
	st := awaitUplinkAcked(t, ctx, a, 3)
	if st.DeadLettered != 1 || st.DeadLetterMsgs != 1 || st.Refusals != 2 || st.Dropped[outbox.DropRejectedByHub] != 1 ||
		!strings.Contains(st.LastRejection, "no hub stream captures") {
		t.Fatalf("uplink %+v", st)
	}
	list := deadLetters(t, a)
	if len(list) != 1 || list[0].Subject != "other.x" || list[0].Reason != outbox.ReasonNoStream || list[0].OutboxSeq != 2 ||
		list[0].MsgID == "" || list[0].Refusals != 2 {
		t.Fatalf("dead letters %+v", list)
	}

	mon := "http://" + a.MonitorAddr().String()
	var uz monitor.Uplinkz
	getJSON(t, mon+"/uplinkz", &uz)
	if u := uz.Uplinks[0]; u.DeadLettered != 1 || u.DeadLetterMsgs != 1 || u.LastRejectionAt == nil ||
		u.LastRejectionAgeSeconds <= 0 || !strings.Contains(u.LastRejection, "no_stream") {
		t.Fatalf("/uplinkz %+v", u)
	}
	resp, err := http.Get(mon + "/metrics")
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	for _, want := range []string{
		`leafbox_uplink_dropped_total{uplink="tel",reason="rejected_by_hub"} 1`,
		`leafbox_uplink_dead_letter_messages{uplink="tel"} 1`,
		`leafbox_uplink_hub_refusals_total{uplink="tel"} 2`,
		`leafbox_uplink_hub_duplicates_unexpected_total{uplink="tel"} 0`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// TestUplinkWrongExpectedStreamDeadLettered: a message the hub stores
// in another stream than the uplink's (err_code 10060) is dead-lettered;
// the others go on in order.
func TestUplinkWrongExpectedStreamDeadLettered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, hjs, stream := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-wrong"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.telemetry.>"}})
	other, err := hjs.CreateStream(ctx, jetstream.StreamConfig{Name: "OTHER", Subjects: []string{"site1.other.>"}})
	require.NoError(t, err)
	a := startGateway(t, "server_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>, other.>], hub_subject_prefix: site1., stream: SITE, drain_jitter: 0s}]\n", Flags{})
	gw := natsConnect(t, "nats://"+a.Addr().String())
	publishAll(t, gw, "telemetry.a", "1", "other.x", "elsewhere", "telemetry.b", "2")
	awaitStreamMsgs(t, ctx, stream, 2, func() string { return fmt.Sprintf("uplink %+v", a.UplinkStatus()[0]) })
	requireHubData(t, ctx, stream, "1", "2")
	requireHubData(t, ctx, other)
	st := awaitUplinkAcked(t, ctx, a, 2)
	list := deadLetters(t, a)
	if st.DeadLettered != 1 || len(list) != 1 || list[0].Reason != outbox.ReasonWrongStream ||
		!strings.Contains(list[0].Error, "10060") || st.Refusals != outbox.DefaultDeadLetterAfter {
		t.Fatalf("uplink %+v; dead letters %+v", st, list)
	}
}

// TestUplinkOversizedDeadLettered: a message above the hub's
// max_payload (read from the leaf INFO) is never sent, which would make
// the hub close the link; it is dead-lettered and the link stays up.
func TestUplinkOversizedDeadLettered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, _, stream := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-small", Config: "max_payload: 2048"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}})
	a := startGateway(t, "server_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE, drain_jitter: 0s}]\n", Flags{})
	gw := natsConnect(t, "nats://"+a.Addr().String())
	publishAll(t, gw, "telemetry.a", "1", "telemetry.big", strings.Repeat("x", 4096), "telemetry.b", "2")
	awaitStreamMsgs(t, ctx, stream, 2, func() string { return fmt.Sprintf("uplink %+v", a.UplinkStatus()[0]) })
	requireHubData(t, ctx, stream, "1", "2")
	st := awaitUplinkAcked(t, ctx, a, 2)
	list := deadLetters(t, a)
	if st.DeadLettered != 1 || len(list) != 1 || list[0].Reason != outbox.ReasonTooLarge || list[0].Subject != "telemetry.big" ||
		!strings.Contains(list[0].Error, "max_payload is 2048") {
		t.Fatalf("uplink %+v; dead letters %+v", st, list)
	}
	if ls := a.node.Link(0).Status(); ls.Connects != 1 {
		t.Fatalf("the link reconnected: %+v", ls)
	}
}

// TestUplinkHubRestartNotDeadLettered: a hub that hangs (SIGSTOP: the
// link stays up, PubAcks and stream lookups go unanswered) and is then
// restarted while the uplink forwards is transient, even with
// dead_letter_after: 1: nothing is refused or dead-lettered, and every
// message arrives once, in order.
func TestUplinkHubRestartNotDeadLettered(t *testing.T) {
	const before, during = 50, 50
	ctx, cancel := context.WithTimeout(context.Background(), 6*testTimeout)
	defer cancel()
	hub, _, stream := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-restart"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}, Duplicates: time.Minute})
	a := startGateway(t, "server_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE, hub_domain: hub,"+
		" drain_jitter: 0s, dead_letter_after: 1}]\n", Flags{})
	gw := natsConnect(t, "nats://"+a.Addr().String())
	var want []string
	publish := func(from, to int) {
		t.Helper()
		for i := from; i < to; i++ {
			require.NoError(t, gw.Publish("telemetry.t", []byte(strconv.Itoa(i))))
			want = append(want, strconv.Itoa(i))
		}
		require.NoError(t, gw.Flush())
	}
	state := func() string { return fmt.Sprintf("uplink %+v", a.UplinkStatus()[0]) }
	publish(0, before)
	awaitStreamMsgs(t, ctx, stream, before, state)
	hub.Pause()
	publish(before, before+during/2)
	awaitUplink(t, ctx, a, "a PubAck times out at the hung hub", func(st outbox.Status) bool { return st.Retries > 0 || st.Refusals > 0 })
	hub.Restart()
	publish(before+during/2, before+during)
	_, stream = hubJetStream(t, ctx, hub, "SITE")
	awaitStreamMsgs(t, ctx, stream, before+during, state)
	requireHubData(t, ctx, stream, want...)
	st := awaitUplinkAcked(t, ctx, a, before+during)
	if st.DeadLettered != 0 || st.Refusals != 0 || st.DeadLetterMsgs != 0 || len(deadLetters(t, a)) != 0 {
		t.Fatalf("a hub restart was taken as a refusal: %+v", st)
	}
}

// TestUplinkUnexpectedDuplicate: the hub stream already holds a message
// with the Nats-Msg-Id the uplink gives its first message (an id
// collision); its PubAck says duplicate. The uplink counts it, does not
// count it as acked, and dead-letters it as duplicate_id; requeued, it
// is sent with a new id and stored.
func TestUplinkUnexpectedDuplicate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	hub, hjs, stream := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-dup"}, "hub",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}, Duplicates: time.Hour})
	a := startGateway(t, "server_name: gw1\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE, drain_jitter: 0s}]\n", Flags{})
	id := a.node.Outbox(0).MsgID(1)
	_, err := hjs.PublishMsg(ctx, &nats.Msg{Subject: "site1.telemetry.old", Data: []byte("earlier"),
		Header: nats.Header{"Nats-Msg-Id": []string{id}}})
	require.NoError(t, err)
	gw := natsConnect(t, "nats://"+a.Addr().String())
	publishAll(t, gw, "telemetry.a", "new", "telemetry.b", "next")
	state := func() string { return fmt.Sprintf("uplink %+v", a.UplinkStatus()[0]) }
	awaitStreamMsgs(t, ctx, stream, 2, state)
	st := awaitUplinkAcked(t, ctx, a, 1)
	requireHubData(t, ctx, stream, "earlier", "next")
	list := deadLetters(t, a)
	if st.HubDuplicatesUnexpected != 1 || st.DeadLettered != 1 || len(list) != 1 || list[0].Reason != outbox.ReasonDuplicateID ||
		list[0].MsgID != id {
		t.Fatalf("uplink %+v; dead letters %+v", st, list)
	}
	n, err := a.node.Outbox(0).Requeue([]uint64{list[0].Seq})
	require.NoError(t, err)
	require.DeepEqual(t, n, 1)
	awaitStreamMsgs(t, ctx, stream, 3, state)
	requireHubData(t, ctx, stream, "earlier", "next", "new")
	m, err := stream.GetMsg(ctx, 3)
	require.NoError(t, err)
	if got := m.Header.Get("Nats-Msg-Id"); got == id || got == "" {
		t.Fatalf("requeued message stored with id %q, want a new one (not %q)", got, id)
	}
}
