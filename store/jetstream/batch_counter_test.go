package jetstream

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/jsapi"
)

// batchStep is one message of a side-by-side batch: bm's arguments, the
// header pairs in kv.
type batchStep struct {
	subj, id string
	seq      int
	commit   string
	data     string
	kv       []string
}

// storedText is every message of stream name as "seq subject body
// sorted-headers" lines.
func storedText(t *testing.T, nc *nats.Conn, name string) []string {
	t.Helper()
	msgs := storedMsgs(t, nc, name)
	var seqs []uint64
	for seq := range msgs {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	var out []string
	for _, seq := range seqs {
		m := msgs[seq]
		var hs []string
		for k, v := range m.Header {
			hs = append(hs, k+"="+strings.Join(v, ","))
		}
		slices.Sort(hs)
		out = append(out, fmt.Sprintf("msg %d %s %q %s", seq, m.Subject, m.Data, hs))
	}
	return out
}

// batchCounterTranscript runs atomic batches with counter increments and
// schedules against the server behind nc and returns every answer, the
// stored messages and what the schedules produced, as text.
func batchCounterTranscript(t *testing.T, nc *nats.Conn) []string {
	ctx := testCtx(t)
	js, err := njs.New(nc)
	require.NoError(t, err)
	var out []string
	say := func(step, reply string) { out = append(out, step+": "+reply) }

	for _, c := range []struct{ name, body string }{
		{"BC", `{"name":"BC","subjects":["bc.>"],"allow_msg_counter":true,"allow_atomic":true,"storage":"memory"}`},
		{"BCF", `{"name":"BCF","subjects":["bcf.>"],"allow_msg_counter":true,"allow_atomic":true}`},
		{"BN", `{"name":"BN","subjects":["bn.>"],"allow_atomic":true,"storage":"memory"}`},
		{"BS", `{"name":"BS","subjects":["bs.>"],"allow_msg_schedules":true,"allow_atomic":true,"allow_msg_ttl":true,"storage":"memory"}`},
		{"BX", `{"name":"BX","subjects":["bx.>"],"allow_msg_counter":true,"allow_atomic":true,"allow_msg_schedules":true}`},
		{"BD", `{"name":"BD","subjects":["bd.>"],"allow_msg_counter":true,"allow_atomic":true,"discard":"new"}`},
	} {
		say("create "+c.name, apiErrOf(t, apiReq(t, nc, "$JS.API.STREAM.CREATE."+c.name, c.body)))
	}
	run := func(name string, steps ...batchStep) {
		for _, p := range steps {
			say(fmt.Sprintf("%s %s %d", name, p.id, p.seq), batchRequest(t, ctx, nc, batchMsg(p.subj, p.id, p.seq, p.commit, p.data, p.kv...)))
		}
	}
	incr := func(subj, id string, seq int, commit, by string, kv ...string) batchStep {
		return batchStep{subj: subj, id: id, seq: seq, commit: commit, kv: append([]string{jsapi.HeaderIncr, by}, kv...)}
	}
	single := func(step, subj, by string) {
		m := nats.NewMsg(subj)
		m.Header.Set(jsapi.HeaderIncr, by)
		say(step, batchRequest(t, ctx, nc, m))
	}

	for _, st := range []string{"bc", "bcf"} {
		// Increments to one subject add up within the batch.
		run(st+" one", incr(st+".a", "one", 1, "", "1"), incr(st+".a", "one", 2, "", "2"), incr(st+".a", "one", 3, "1", "3"))
		single(st+" single after", st+".a", "4")
		// Two subjects, interleaved, committed by "eob".
		run(st+" two", incr(st+".a", "two", 1, "", "5"), incr(st+".b", "two", 2, "", "10"),
			incr(st+".a", "two", 3, "", "-1"), incr(st+".b", "two", 4, "", "1"),
			batchStep{subj: st + ".a", id: "two", seq: 5, commit: "eob"})
		// An invalid increment mid-batch: nothing of the batch is stored.
		run(st+" bad value", incr(st+".a", "bv", 1, "", "100"), incr(st+".a", "bv", 2, "", "x"), incr(st+".b", "bv", 3, "1", "1"))
		run(st+" payload", incr(st+".a", "pl", 1, "", "100"), batchStep{subj: st + ".a", id: "pl", seq: 2, commit: "1", data: "x", kv: []string{jsapi.HeaderIncr, "1"}})
		run(st+" missing", incr(st+".a", "mi", 1, "", "100"), batchStep{subj: st + ".b", id: "mi", seq: 2, commit: "1"})
		run(st+" expect", incr(st+".a", "ex", 1, "", "100"), incr(st+".b", "ex", 2, "1", "1", jsapi.HeaderExpectedLastSubjSeq, "0"))
		run(st+" rollup", incr(st+".a", "ro", 1, "1", "1", jsapi.HeaderRollup, "sub"))
		run(st+" msgid", incr(st+".c", "id", 1, "", "7", jsapi.HeaderMsgID, "i1"), incr(st+".c", "id", 2, "1", "8", jsapi.HeaderMsgID, "i2"))
		single(st+" single last", st+".a", "0")
		single(st+" single b", st+".b", "0")
	}
	run("bn incr", batchStep{subj: "bn.a", id: "ni", seq: 1, data: "plain"}, incr("bn.a", "ni", 2, "1", "1"))
	run("bn bad incr", incr("bn.a", "nb", 1, "1", "x"))

	// Schedules. Validation inside a batch: nothing stored on an error.
	future := "@at " + time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	schedule := func(subj, id string, seq int, commit, pattern, target string, kv ...string) batchStep {
		h := append([]string{jsapi.HeaderSchedule, pattern, jsapi.HeaderScheduleTarget, target}, kv...)
		return batchStep{subj: subj, id: id, seq: seq, commit: commit, data: "body of " + subj, kv: h}
	}
	plain := func(subj, id string, seq int, commit string, kv ...string) batchStep {
		return batchStep{subj: subj, id: id, seq: seq, commit: commit, data: "plain " + subj, kv: kv}
	}
	run("bs target", plain("bs.p", "st", 1, ""), schedule("bs.x", "st", 2, "1", future, "bs.x"))
	run("bs pattern", plain("bs.p", "sp", 1, ""), schedule("bs.x", "sp", 2, "1", "@at nonsense", "bs.out"))
	run("bs ttl", plain("bs.p", "sl", 1, ""), schedule("bs.x", "sl", 2, "1", future, "bs.out", "Nats-Schedule-TTL", "abc"))
	run("bs rollup second", plain("bs.x", "sr", 1, ""), schedule("bs.x", "sr", 2, "1", future, "bs.out"))
	run("bs scheduler", plain("bs.p", "sc", 1, "", "Nats-Scheduler", "bs.x"), plain("bs.q", "sc", 2, "1"))
	run("bs cancel plain in batch", plain("bs.z", "cz", 1, ""),
		plain("bs.y", "cz", 2, "1", jsapi.HeaderScheduleNext, "purge", jsapi.HeaderScheduler, "bs.z"))
	run("bs disabled", schedule("bn.s", "nd", 1, "1", future, "bn.out"))
	run("bs incr", plain("bs.p", "si", 1, ""), incr("bs.c", "si", 2, "1", "1"))
	// A schedule and its cancel (Nats-Schedule-Next purge) in one batch.
	run("bs sched cancel", schedule("bs.sc", "sx", 1, "", future, "bs.out.sc"),
		plain("bs.y", "sx", 2, "1", jsapi.HeaderScheduleNext, "purge", jsapi.HeaderScheduler, "bs.sc"))
	say("bs sched cancel after", lastOn(t, nc, "BS", "bs.sc"))

	// Schedules that fire: one from a batch with kept headers, one
	// cancelled by a plain message in a later batch, and a witness due
	// after the cancelled one.
	now := time.Now()
	soon := "@at " + now.Add(time.Second).UTC().Format(time.RFC3339)
	later := "@at " + now.Add(3*time.Second).UTC().Format(time.RFC3339)
	run("bs fire", plain("bs.p", "sf", 1, ""),
		schedule("bs.sched.a", "sf", 2, "", soon, "bs.out.a", "Custom", "kept", "Nats-Schedule-TTL", "5m"),
		schedule("bs.sched.c", "sf", 3, "1", soon, "bs.out.c"))
	run("bs cancel", plain("bs.sched.c", "pc", 1, ""), schedule("bs.sched.w", "pc", 2, "1", later, "bs.out.w"))
	consume := func(subj string) njs.Consumer {
		c, err := js.OrderedConsumer(ctx, "BS", njs.OrderedConsumerConfig{FilterSubjects: []string{subj}})
		require.NoError(t, err)
		return c
	}
	a, w := consume("bs.out.a"), consume("bs.out.w")
	for _, p := range []producedMsg{nextProduced(t, a), nextProduced(t, w)} {
		out = append(out, fmt.Sprintf("produced %s %q %s", p.Subject, p.Data, strings.ReplaceAll(p.Header, "\n", "; ")))
	}
	// The witness fired after the cancelled one was due.
	say("bs out.c", lastOn(t, nc, "BS", "bs.out.c"))
	say("bs sched.a", lastOn(t, nc, "BS", "bs.sched.a"))

	for _, name := range []string{"BC", "BCF", "BN"} {
		out = append(out, storedText(t, nc, name)...)
	}
	// The schedule stream's messages before the firings (the produced
	// ones carry times and purge their schedules).
	for _, l := range storedText(t, nc, "BS") {
		if !strings.Contains(l, "bs.out") && !strings.Contains(l, "bs.sched.a") && !strings.Contains(l, "bs.sched.w") {
			out = append(out, l)
		}
	}
	return out
}

// TestAtomicBatchCountersSchedulesMatchNatsServer runs the same atomic
// batches with counter increments (several to one subject, to two
// subjects, invalid ones mid-batch, on a stream without counters) and
// with schedules (refused ones, a cancel, ones that fire) against
// nats-server v2.15.2 and leafbox, and compares every answer, the stored
// messages and the produced ones (Nats-Schedule-Next's time masked).
func TestAtomicBatchCountersSchedulesMatchNatsServer(t *testing.T) {
	t.Parallel()
	_, hnc, _ := startNATSServerJS(t)
	env := newTestEnv(t, Config{})
	var ref, got []string
	t.Run("sides", func(t *testing.T) {
		for _, side := range []struct {
			name string
			nc   *nats.Conn
			out  *[]string
		}{{"nats-server", hnc, &ref}, {"leafbox", env.nc, &got}} {
			t.Run(side.name, func(t *testing.T) {
				t.Parallel()
				*side.out = batchCounterTranscript(t, side.nc)
			})
		}
	})
	if t.Failed() {
		return
	}
	compareTranscripts(t, ref, got)
	if testing.Verbose() || t.Failed() {
		t.Logf("nats-server:\n%s", strings.Join(ref, "\n"))
	}
	// The reference must show the features working.
	for _, want := range []string{
		`bc one one 3: {"stream":"BC","seq":3,"batch":"one","count":3}`,
		`bc single after: {"stream":"BC","seq":4,"val":"10"}`,
		`msg 3 bc.a "{\"val\":\"6\"}"`,
		`produced bs.out.a "body of bs.sched.a"`,
	} {
		if !slices.ContainsFunc(ref, func(l string) bool { return strings.HasPrefix(l, want) }) {
			t.Errorf("nats-server transcript lacks %q", want)
		}
	}
}
