package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/cmd/internal/app"
	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestUplinkDeadLettersRequeue runs the CLI against a running leafbox
// whose uplink forwards to a real nats-server hub (JetStream domain
// "hub"): a message no hub stream captures is dead-lettered and listed by
// `uplink deadletters` and `uplink status`; once the hub's stream captures
// it, `uplink requeue` sends it there with its original Nats-Msg-Id.
func TestUplinkDeadLettersRequeue(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	hub := leaftest.StartHub(t, leaftest.HubOptions{Name: "hub-cli",
		Config: fmt.Sprintf("jetstream { store_dir: %q, domain: hub }", t.TempDir())})
	hc, err := nats.Connect(hub.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.Close)
	hjs, err := jetstream.New(hc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hjs.CreateStream(ctx, jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.telemetry.>"}}); err != nil {
		t.Fatal(err)
	}

	conf := writeFile(t, "gw.yaml", "server_name: gw1\nlisten: 127.0.0.1:-1\nhttp: 127.0.0.1:-1\n"+
		fmt.Sprintf("jetstream: {store_dir: %q}\n", t.TempDir())+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>, other.>], hub_subject_prefix: site1., stream: SITE, hub_domain: hub,"+
		" drain_jitter: 0s, dead_letter_after: 1}]\n")
	cfg, err := loadConfig(conf, config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := app.Build(cfg, app.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		sctx, scancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer scancel()
		_ = a.Shutdown(sctx)
	})
	mon := "http://" + a.MonitorAddr().String()

	gw, err := nats.Connect("nats://" + a.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	for _, subj := range []string{"other.x", "telemetry.a"} {
		if err := gw.Publish(subj, []byte(subj)); err != nil {
			t.Fatal(err)
		}
	}
	if err := gw.Flush(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, ctx, "the poison message is dead-lettered and the next one acked", func() bool {
		st := a.UplinkStatus()[0]
		return st.DeadLetterMsgs == 1 && st.Acked == 1
	})

	stdout, stderr, code := runCLI(t, "uplink", "deadletters", "--monitor", mon)
	requireCode(t, code, 0, stderr)
	requireContains(t, "deadletters", stdout, "UPLINK", "SEQ", "REASON", "tel", "other.x", "no_stream", "no hub stream captures")
	t.Logf("uplink deadletters:\n%s", stdout)
	stdout, stderr, code = runCLI(t, "uplink", "status", "--monitor", mon)
	requireCode(t, code, 0, stderr)
	requireContains(t, "status", stdout, "DEAD", "rejected_by_hub=1", "tel: 1 dead-lettered, 1 held", "last rejection",
		"leafbox uplink deadletters tel")
	t.Logf("uplink status:\n%s", stdout)
	dz := monitorDeadLetters(t, mon)
	id := dz[0]

	// Errors name the cause.
	_, stderr, code = runCLI(t, "uplink", "requeue", "tel", "99", "--monitor", mon)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "no dead-lettered message 99")
	_, stderr, code = runCLI(t, "uplink", "requeue", "nope", "--all", "--monitor", mon)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "404", `no such uplink "nope"`)
	_, stderr, code = runCLI(t, "uplink", "requeue", "tel", "--monitor", mon)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "give the sequences to requeue or --all")

	// The uplink expects the stream SITE (Nats-Expected-Stream), so the
	// fix is SITE capturing the subject too.
	site, err := hjs.UpdateStream(ctx, jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.telemetry.>", "site1.other.>"}})
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCLI(t, "uplink", "requeue", "tel", "1", "--monitor", mon)
	requireCode(t, code, 0, stderr)
	requireContains(t, "requeue", stdout, "requeued 1 message(s) of uplink tel")
	var m *jetstream.RawStreamMsg
	waitUntil(t, ctx, "the requeued message reaches the hub stream", func() bool {
		m, err = site.GetMsg(ctx, 2)
		return err == nil
	})
	if string(m.Data) != "other.x" || m.Subject != "site1.other.x" || m.Header.Get("Nats-Msg-Id") != id {
		t.Fatalf("hub got %q %q with id %q, want the original id %q", m.Subject, m.Data, m.Header.Get("Nats-Msg-Id"), id)
	}
	if v := m.Header.Get("Leafbox-Dead-Reason"); v != "" {
		t.Fatalf("the hub got the dead-letter header %q", v)
	}
	stdout, stderr, code = runCLI(t, "uplink", "deadletters", "tel", "--monitor", mon)
	requireCode(t, code, 0, stderr)
	requireContains(t, "deadletters after requeue", stdout, "no dead-lettered messages")
}

// monitorDeadLetters returns the msg_id of every dead-lettered message
// the running leafbox at mon lists in /uplinkz/deadletter.
func monitorDeadLetters(t *testing.T, mon string) []string {
	t.Helper()
	resp, err := http.Get(mon + monitor.DeadLetterzPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var dz monitor.DeadLetterz
	if err := json.NewDecoder(resp.Body).Decode(&dz); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range dz.Messages {
		ids = append(ids, d.MsgID)
	}
	if len(ids) == 0 || ids[0] == "" {
		t.Fatalf("no msg_id listed: %+v", dz)
	}
	return ids
}

// waitUntil polls cond every 20 ms until it holds or ctx ends.
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting until %s", what)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
