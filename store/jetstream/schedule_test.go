package jetstream

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// producedMsg is a message a schedule produced, as a consumer saw it.
type producedMsg struct {
	Subject string
	Header  string // sorted "key: value" lines, Nats-Schedule-Next masked
	Data    string
	Next    string // Nats-Schedule-Next as sent
}

// nextProduced waits for the next message of an ordered consumer on
// filter (the schedule's target), at most the test's deadline.
func nextProduced(t *testing.T, cons njs.Consumer) producedMsg {
	t.Helper()
	m, err := cons.Next(njs.FetchMaxWait(20 * time.Second))
	require.NoError(t, err, "waiting for a scheduled message")
	var lines []string
	next := m.Headers().Get("Nats-Schedule-Next")
	for k, vs := range m.Headers() {
		for _, v := range vs {
			if k == "Nats-Schedule-Next" && v != "purge" {
				v = "<time>"
			}
			lines = append(lines, k+": "+v)
		}
	}
	sort.Strings(lines)
	return producedMsg{Subject: m.Subject(), Header: strings.Join(lines, "\n"), Data: string(m.Data()), Next: next}
}

// lastOn returns the error (or "") of a last-by-subject get.
func lastOn(t *testing.T, nc *nats.Conn, stream, subj string) string {
	t.Helper()
	return apiErrOf(t, apiReq(t, nc, "$JS.API.STREAM.MSG.GET."+stream, fmt.Sprintf(`{"last_by_subj":%q}`, subj)))
}

// scheduleRun is what one side did in TestScheduleMatchesNatsServer.
type scheduleRun struct {
	creates, updates []string
	acks             []ackOutcome
	produced         []producedMsg
	after            []string // last-by-subject errors after the firing
}

// TestScheduleMatchesNatsServer runs the same stream creates, schedule
// publishes (refused ones included) and firings against a real
// nats-server and leafbox, and compares the answers and the messages
// the schedules produce on their targets (headers with the
// Nats-Schedule-Next time masked, body), then that a one-shot schedule
// and a cancelled one are gone.
func TestScheduleMatchesNatsServer(t *testing.T) {
	t.Parallel()
	_, hnc, _ := startNATSServerJS(t)
	env := newTestEnv(t, Config{})
	runs := map[string]*scheduleRun{}
	t.Run("sides", func(t *testing.T) {
		for name, nc := range map[string]*nats.Conn{"nats-server": hnc, "leafbox": env.nc} {
			run := &scheduleRun{}
			runs[name] = run
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				scheduleScenario(t, nc, run)
			})
		}
	})
	ref, got := runs["nats-server"], runs["leafbox"]
	if t.Failed() {
		return
	}
	require.DeepEqual(t, got.creates, ref.creates)
	require.DeepEqual(t, got.updates, ref.updates)
	for i := range ref.acks {
		require.Equal(t, got.acks[i], ref.acks[i], fmt.Sprintf("publish %d", i))
	}
	require.Equal(t, len(got.produced), len(ref.produced))
	for i := range ref.produced {
		g, r := got.produced[i], ref.produced[i]
		g.Next, r.Next = "", ""
		require.Equal(t, g, r, fmt.Sprintf("produced %d", i))
	}
	require.DeepEqual(t, got.after, ref.after)
	// The reference must show the features working.
	require.Equal(t, ref.acks[len(ref.acks)-1].Err, "")
	require.Equal(t, ref.updates[0], "500/10052 message schedules can not be disabled")
	if !strings.Contains(ref.produced[0].Header, "Nats-Schedule-Next: purge") {
		t.Fatalf("nats-server produced %+v", ref.produced[0])
	}
}

func scheduleScenario(t *testing.T, nc *nats.Conn, run *scheduleRun) {
	ctx := testCtx(t)
	js, err := njs.New(nc)
	require.NoError(t, err)
	for _, c := range []struct{ name, body string }{
		{"DN", `{"name":"DN","subjects":["dn"],"allow_msg_schedules":true,"discard":"new"}`},
		{"SRC", `{"name":"SRC","subjects":["src"],"storage":"memory"}`},
		{"SS", `{"name":"SS","subjects":["ss"],"allow_msg_schedules":true,"sources":[{"name":"SRC"}]}`},
		{"MS", `{"name":"MS","mirror":{"name":"SRC"},"allow_msg_schedules":true}`},
		{"S", `{"name":"S","subjects":["s.>"],"allow_msg_schedules":true,"allow_msg_ttl":true,"storage":"memory"}`},
		{"P", `{"name":"P","subjects":["p.>"],"storage":"memory"}`},
		{"N", `{"name":"N","subjects":["n.>"],"storage":"memory"}`},
	} {
		run.creates = append(run.creates, apiErrOf(t, apiReq(t, nc, "$JS.API.STREAM.CREATE."+c.name, c.body)))
	}
	for _, u := range []string{
		`{"name":"S","subjects":["s.>"],"allow_msg_ttl":true,"allow_rollup_hdrs":true,"storage":"memory"}`,
		`{"name":"P","subjects":["p.>"],"storage":"memory","allow_msg_schedules":true,"deny_purge":true}`,
	} {
		run.updates = append(run.updates, apiErrOf(t, apiReq(t, nc, "$JS.API.STREAM.UPDATE."+u[9:10], u)))
	}
	future := "@at " + time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	soon := "@at " + time.Now().Add(time.Second).UTC().Format(time.RFC3339)
	sched := func(subj, pattern, target string, extra ...string) pubStep {
		h := []string{"Nats-Schedule", pattern}
		if target != "" {
			h = append(h, "Nats-Schedule-Target", target)
		}
		return pubStep{subj: subj, hdr: append(h, extra...), data: "body of " + subj}
	}
	steps := []pubStep{
		{subj: "s.plain", data: "plain"},
		{subj: "s.src", hdr: []string{"Src-Header", "1", "Nats-Msg-Id", "src-id"}, data: "from the source"},
		sched("s.a", "@at nonsense", "s.out"),
		sched("s.a", "@every 500ms", "s.out"),
		sched("s.a", "@every 1x", "s.out"),
		sched("s.a", "* * * * *", "s.out"),
		sched("s.a", "0 0 25 * * *", "s.out"),
		sched("s.a", future, ""),
		sched("s.a", future, "s.a"),
		sched("s.a", future, "x.out"),
		sched("s.a", future, "s.*"),
		sched("s.a", future, "s.out", "Nats-Schedule-TTL", "abc"),
		sched("s.a", future, "s.out", "Nats-Schedule-Rollup", "all"),
		sched("s.a", future, "s.out", "Nats-Schedule-Source", "s.out"),
		sched("s.a", future, "s.out", "Nats-Schedule-Source", "x.y"),
		sched("s.a", future, "s.out", "Nats-Schedule-Time-Zone", "Mars/Olympus"),
		sched("s.a", future, "s.out", "Nats-Schedule-Time-Zone", "Europe/Amsterdam"),
		sched("s.a", "0 0 3 * * mon", "s.out", "Nats-Schedule-Time-Zone", "Europe/Amsterdam"),
		sched("s.a", future, "s.out", "Nats-Rollup", "all"),
		{subj: "s.b", hdr: []string{"Nats-Scheduler", "s.a"}},
		{subj: "s.b", hdr: []string{"Nats-Schedule-Next", "2030-01-01T00:00:00Z", "Nats-Scheduler", "s.a"}},
		{subj: "s.b", hdr: []string{"Nats-Schedule-Next", "purge", "Nats-Scheduler", "s.plain"}},
		{subj: "s.b", hdr: []string{"Nats-Schedule-Next", "purge", "Nats-Scheduler", "s.b"}},
		{subj: "s.b", hdr: []string{"Nats-Schedule-Next", "purge"}},
		{subj: "s.b", hdr: []string{"Nats-Schedule-Time-Zone", "Nope/Nope"}},
		sched("p.a", future, "p.out"),
		sched("n.a", future, "n.out"),
		sched("n.a", "@at nonsense", "n.out"),
		{subj: "n.a", hdr: []string{"Nats-Schedule-Next", "purge", "Nats-Scheduler", "n.x"}},
		{subj: "n.a", hdr: []string{"Nats-Schedule-Time-Zone", "Nope/Nope"}},
		{subj: "n.a", hdr: []string{"Nats-Scheduler", "n.x"}},
		// A one-shot schedule, kept headers and TTL and rollup passed on.
		sched("s.sched.at", soon, "s.out.at", "Custom", "kept", "Nats-Msg-Id", "at-id", "Nats-Expected-Stream", "S",
			"Nats-Schedule-TTL", "5m", "Nats-Schedule-Rollup", "sub"),
		// A repeating schedule producing the last message of s.src.
		sched("s.sched.every", "@every 1s", "s.out.every", "Nats-Schedule-Source", "s.src"),
		// Cron, every second.
		sched("s.sched.cron", "* * * * * *", "s.out.cron"),
		// Replaced before it fires: only the second one produces.
		sched("s.sched.repl", future, "s.out.repl"),
		sched("s.sched.repl", soon, "s.out.repl"),
		// Cancelled by a plain message before it fires.
		sched("s.sched.plain", soon, "s.out.plain"),
		{subj: "s.sched.plain", data: "cancel"},
	}
	for _, p := range steps {
		run.acks = append(run.acks, publishStep(t, nc, p))
	}
	consume := func(subj string) njs.Consumer {
		c, err := js.OrderedConsumer(ctx, "S", njs.OrderedConsumerConfig{FilterSubjects: []string{subj}})
		require.NoError(t, err)
		return c
	}
	at, every, cron, repl := consume("s.out.at"), consume("s.out.every"), consume("s.out.cron"), consume("s.out.repl")
	run.produced = append(run.produced, nextProduced(t, at), nextProduced(t, repl))
	e1, e2 := nextProduced(t, every), nextProduced(t, every)
	c1 := nextProduced(t, cron)
	run.produced = append(run.produced, e1, e2, c1)
	for _, p := range []producedMsg{e1, e2, c1} {
		if _, err := time.Parse(time.RFC3339Nano, p.Next); err != nil {
			t.Fatalf("Nats-Schedule-Next %q: %v", p.Next, err)
		}
	}
	// Cancel the repeating ones as a client may.
	for _, s := range []string{"s.sched.every", "s.sched.cron"} {
		o := publishStep(t, nc, pubStep{subj: "s.cancel", hdr: []string{"Nats-Schedule-Next", "purge", "Nats-Scheduler", s}})
		o.Seq = 0 // how often the repeating ones fired by now varies
		run.acks = append(run.acks, o)
	}
	for _, s := range []string{"s.sched.at", "s.sched.every", "s.sched.cron", "s.sched.repl", "s.out.plain", "s.sched.plain", "s.cancel"} {
		run.after = append(run.after, s+": "+lastOn(t, nc, "S", s))
	}
}

// TestScheduleSurvivesRestart: a file stream's pending one-shot schedule
// fires after the engine restarts (the schedule is rebuilt from the
// stored schedule message) and is then purged; a repeating one goes on.
func TestScheduleSurvivesRestart(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	require.Equal(t, apiErrOf(t, apiReq(t, env.nc, "$JS.API.STREAM.CREATE.S", `{"name":"S","subjects":["s.>"],"allow_msg_schedules":true,"storage":"file"}`)), "")
	at := "@at " + time.Now().Add(2*time.Second).UTC().Format(time.RFC3339)
	require.Equal(t, publishStep(t, env.nc, pubStep{subj: "s.at", hdr: []string{"Nats-Schedule", at, "Nats-Schedule-Target", "s.out"}, data: "once"}).Err, "")
	require.Equal(t, publishStep(t, env.nc, pubStep{subj: "s.every", hdr: []string{"Nats-Schedule", "@every 1s", "Nats-Schedule-Target", "s.tick"}, data: "tick"}).Err, "")
	env.restart()
	s := env.eng.lookup("S")
	s.mu.Lock()
	n := len(s.sched.bySubj)
	s.mu.Unlock()
	if n != 2 {
		t.Fatalf("%d schedules after restart, want 2", n)
	}
	cons, err := env.js.OrderedConsumer(ctx, "S", njs.OrderedConsumerConfig{FilterSubjects: []string{"s.out", "s.tick"}})
	require.NoError(t, err)
	seen := map[string]int{}
	for seen["s.out"] == 0 || seen["s.tick"] < 2 {
		p := nextProduced(t, cons)
		seen[p.Subject]++
		if p.Subject == "s.out" {
			require.Equal(t, p.Data, "once")
			require.Equal(t, p.Next, "purge")
		}
	}
	require.Equal(t, seen["s.out"], 1)
	require.Equal(t, lastOn(t, env.nc, "S", "s.at"), "404/10037 no message found")
}
