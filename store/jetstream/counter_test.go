package jetstream

import (
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
)

// apiReq sends a raw JetStream API request and returns the reply body.
func apiReq(t *testing.T, nc *nats.Conn, subj, body string) string {
	t.Helper()
	m, err := nc.RequestWithContext(testCtx(t), subj, []byte(body))
	require.NoError(t, err, subj)
	return string(m.Data)
}

// apiErrOf returns the "code/err_code description" of an API reply's
// error, or "" for none.
func apiErrOf(t *testing.T, resp string) string {
	t.Helper()
	var r struct {
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp), &r), resp)
	if r.Error == nil {
		return ""
	}
	return fmt.Sprintf("%d/%d %s", r.Error.Code, r.Error.ErrCode, r.Error.Description)
}

// pubStep is one publish of a side-by-side sequence.
type pubStep struct {
	subj string
	hdr  []string // key, value pairs
	data string
}

// ackOutcome is what a side answered to a publish, without the stream
// name (the same on both sides).
type ackOutcome struct {
	Seq       uint64 `json:"seq"`
	Duplicate bool   `json:"duplicate"`
	Val       string `json:"val"`
	Err       string
}

func publishStep(t *testing.T, nc *nats.Conn, p pubStep) ackOutcome {
	t.Helper()
	m := nats.NewMsg(p.subj)
	for i := 0; i+1 < len(p.hdr); i += 2 {
		m.Header.Add(p.hdr[i], p.hdr[i+1])
	}
	m.Data = []byte(p.data)
	r, err := nc.RequestMsgWithContext(testCtx(t), m)
	require.NoError(t, err)
	var o ackOutcome
	require.NoError(t, json.Unmarshal(r.Data, &o), string(r.Data))
	o.Err = apiErrOf(t, string(r.Data))
	return o
}

// storedMsg is a stored message as STREAM.MSG.GET returns it.
type storedMsg struct {
	Subject string
	Header  nats.Header
	Data    string
}

// storedMsgs reads every message of stream name through STREAM.MSG.GET.
func storedMsgs(t *testing.T, nc *nats.Conn, name string) map[uint64]storedMsg {
	t.Helper()
	var info struct {
		State struct {
			FirstSeq uint64 `json:"first_seq"`
			LastSeq  uint64 `json:"last_seq"`
		} `json:"state"`
	}
	require.NoError(t, json.Unmarshal([]byte(apiReq(t, nc, "$JS.API.STREAM.INFO."+name, "")), &info))
	out := map[uint64]storedMsg{}
	for seq := info.State.FirstSeq; seq != 0 && seq <= info.State.LastSeq; seq++ {
		var r struct {
			Message *struct {
				Subject string `json:"subject"`
				Hdrs    []byte `json:"hdrs"`
				Data    []byte `json:"data"`
			} `json:"message"`
		}
		resp := apiReq(t, nc, "$JS.API.STREAM.MSG.GET."+name, fmt.Sprintf(`{"seq":%d}`, seq))
		require.NoError(t, json.Unmarshal([]byte(resp), &r), resp)
		if r.Message == nil {
			continue
		}
		m := storedMsg{Subject: r.Message.Subject, Data: string(r.Message.Data), Header: nats.Header{}}
		if len(r.Message.Hdrs) > 0 {
			mm := &nats.Msg{}
			hm, err := nats.DecodeHeadersMsg(r.Message.Hdrs)
			require.NoError(t, err)
			mm.Header = hm
			m.Header = mm.Header
		}
		out[seq] = m
	}
	return out
}

// TestCounterMatchesNatsServer runs the same stream creates, updates and
// publishes against a real nats-server and leafbox, and compares every
// answer (PubAck seq, duplicate, val; error code and description) and
// every stored message (subject, headers, body).
func TestCounterMatchesNatsServer(t *testing.T) {
	t.Parallel()
	_, hnc, _ := startNATSServerJS(t)
	env := newTestEnv(t, Config{})
	sides := []struct {
		name string
		nc   *nats.Conn
	}{{"nats-server", hnc}, {"leafbox", env.nc}}

	creates := []struct{ name, body string }{
		{"DN", `{"name":"DN","subjects":["dn"],"allow_msg_counter":true,"discard":"new"}`},
		{"TTL", `{"name":"TTL","subjects":["ttl"],"allow_msg_counter":true,"allow_msg_ttl":true}`},
		{"WQ", `{"name":"WQ","subjects":["wq"],"allow_msg_counter":true,"retention":"workqueue"}`},
		{"SCH", `{"name":"SCH","subjects":["sch"],"allow_msg_counter":true,"allow_msg_schedules":true}`},
		{"C", `{"name":"C","subjects":["c.>"],"allow_msg_counter":true,"allow_direct":true,"storage":"file"}`},
		{"P", `{"name":"P","subjects":["p.>"],"storage":"memory"}`},
		{"MC", `{"name":"MC","mirror":{"name":"C"},"allow_msg_counter":true}`},
		{"MIR", `{"name":"MIR","mirror":{"name":"C"},"storage":"memory"}`},
	}
	updates := []struct{ name, body string }{
		{"C", `{"name":"C","subjects":["c.>"],"allow_direct":true,"storage":"file"}`},
		{"P", `{"name":"P","subjects":["p.>"],"storage":"memory","allow_msg_counter":true}`},
	}
	const big1 = "123456789012345678901234567890123456789"
	steps := []pubStep{
		{subj: "c.a", hdr: []string{"Nats-Incr", "1"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "-5"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", big1}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "-" + big1 + "0"}},
		{subj: "c.b", hdr: []string{"Nats-Incr", "+3"}},
		{subj: "c.a"},
		{subj: "c.a", data: "x"},
		{subj: "c.a", hdr: []string{"Nats-Incr", "abc"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "1.5"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", ""}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "1"}, data: "x"},
		{subj: "c.a", hdr: []string{"Nats-Incr", "1", "Nats-Expected-Last-Sequence", "5"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "1", "Nats-Expected-Last-Subject-Sequence", "4"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "1", "Nats-Expected-Stream", "C"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "1", "Nats-Expected-Last-Msg-Id", "x"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "1", "Nats-Rollup", "sub"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "1", "Nats-TTL", "10s"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "2", "Nats-Msg-Id", "m1"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "2", "Nats-Msg-Id", "m1"}},
		{subj: "c.a", hdr: []string{"Nats-Msg-Id", "m1"}},
		{subj: "c.a", hdr: []string{"Nats-Incr", "7", "Other", "kept"}},
		{subj: "c.b", hdr: []string{"Nats-Incr", "0"}},
		{subj: "p.a", hdr: []string{"Nats-Incr", "1"}},
		{subj: "p.a", hdr: []string{"Nats-Incr", "x"}},
		{subj: "p.a", hdr: []string{"Nats-Incr", ""}},
		{subj: "p.a", data: "plain"},
	}

	type result struct {
		creates, updates []string
		acks             []ackOutcome
		stored, mirrored map[uint64]storedMsg
	}
	var results []result
	for _, side := range sides {
		var r result
		for _, c := range creates {
			r.creates = append(r.creates, apiErrOf(t, apiReq(t, side.nc, "$JS.API.STREAM.CREATE."+c.name, c.body)))
		}
		for _, p := range steps {
			r.acks = append(r.acks, publishStep(t, side.nc, p))
		}
		for _, u := range updates {
			r.updates = append(r.updates, apiErrOf(t, apiReq(t, side.nc, "$JS.API.STREAM.UPDATE."+u.name, u.body)))
		}
		r.stored = storedMsgs(t, side.nc, "C")
		js, err := njs.New(side.nc)
		require.NoError(t, err)
		srcWaitMsgs(t, testCtx(t), js, "MIR", uint64(len(r.stored)))
		r.mirrored = storedMsgs(t, side.nc, "MIR")
		results = append(results, r)
	}
	ref, got := results[0], results[1]
	for i := range creates {
		require.Equal(t, got.creates[i], ref.creates[i], "create "+creates[i].name)
	}
	for i := range updates {
		require.Equal(t, got.updates[i], ref.updates[i], "update "+updates[i].name)
	}
	for i := range steps {
		require.Equal(t, got.acks[i], ref.acks[i], fmt.Sprintf("publish %d %+v", i, steps[i]))
	}
	require.DeepEqual(t, got.stored, ref.stored)
	require.DeepEqual(t, got.mirrored, ref.mirrored)

	// The reference itself must show the feature working, so that the
	// comparison cannot pass on two servers refusing everything.
	want := new(big.Int)
	want.SetString(big1, 10)
	want.Sub(want, big.NewInt(4))
	require.Equal(t, ref.acks[2].Val, want.String())
	require.Equal(t, ref.creates[4], "")
	if !ref.acks[18].Duplicate {
		t.Fatalf("nats-server: %+v, want a duplicate", ref.acks[18])
	}
	if !strings.Contains(ref.acks[5].Err, "10169") {
		t.Fatalf("nats-server: %+v, want 10169", ref.acks[5])
	}
}

// TestCounterSurvivesRestart: a file counter stream's totals are read
// back from its last messages after the engine restarts.
func TestCounterSurvivesRestart(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	require.Equal(t, "", apiErrOf(t, apiReq(t, env.nc, "$JS.API.STREAM.CREATE.C", `{"name":"C","subjects":["c.>"],"allow_msg_counter":true,"storage":"file"}`)))
	for i := 0; i < 10; i++ {
		require.Equal(t, "", publishStep(t, env.nc, pubStep{subj: "c.a", hdr: []string{"Nats-Incr", "3"}}).Err)
	}
	env.restart()
	o := publishStep(t, env.nc, pubStep{subj: "c.a", hdr: []string{"Nats-Incr", "-1"}})
	require.Equal(t, o, ackOutcome{Seq: 11, Val: "29"})
}

// TestCounterSourcesMatchNatsServer: a counter stream sourcing two
// counter streams adds each copy's change in its origin's total, and
// keeps the Nats-Counter-Sources header, as nats-server's does.
func TestCounterSourcesMatchNatsServer(t *testing.T) {
	t.Parallel()
	_, hnc, _ := startNATSServerJS(t)
	env := newTestEnv(t, Config{})
	var totals []string
	var csHdr []string
	for _, nc := range []*nats.Conn{hnc, env.nc} {
		js, err := njs.New(nc)
		require.NoError(t, err)
		for _, body := range []string{
			`{"name":"A","subjects":["a.>"],"allow_msg_counter":true,"storage":"memory"}`,
			`{"name":"B","subjects":["b.>"],"allow_msg_counter":true,"storage":"memory","subject_transform":{"src":"b.>","dest":"a.>"}}`,
			`{"name":"AGG","subjects":["agg"],"allow_msg_counter":true,"storage":"memory","sources":[{"name":"A"},{"name":"B"}]}`,
		} {
			var cfg struct{ Name string }
			require.NoError(t, json.Unmarshal([]byte(body), &cfg))
			require.Equal(t, "", apiErrOf(t, apiReq(t, nc, "$JS.API.STREAM.CREATE."+cfg.Name, body)))
		}
		var msgs map[uint64]storedMsg
		for i, p := range []pubStep{
			{subj: "a.x", hdr: []string{"Nats-Incr", "5"}},
			{subj: "b.x", hdr: []string{"Nats-Incr", "100"}},
			{subj: "a.x", hdr: []string{"Nats-Incr", "-2"}},
			{subj: "b.x", hdr: []string{"Nats-Incr", "1"}},
		} {
			require.Equal(t, publishStep(t, nc, p).Err, "")
			// One at a time: the two sources' order is then fixed.
			srcWaitMsgs(t, testCtx(t), js, "AGG", uint64(i+1))
			msgs = storedMsgs(t, nc, "AGG")
			require.Equal(t, len(msgs), i+1)
		}
		var last storedMsg
		for seq := uint64(1); seq <= 4; seq++ {
			last = msgs[seq]
			csHdr = append(csHdr, last.Header.Get("Nats-Counter-Sources")+" incr="+last.Header.Get("Nats-Incr"))
		}
		totals = append(totals, last.Data)
		// A direct increment on the aggregate keeps the sources header.
		o := publishStep(t, nc, pubStep{subj: "a.x", hdr: []string{"Nats-Incr", "1"}})
		require.Equal(t, "", o.Err)
	}
	require.Equal(t, totals[1], totals[0])
	require.Equal(t, totals[0], `{"val":"104"}`)
	require.DeepEqual(t, csHdr[4:], csHdr[:4])
	if !strings.Contains(csHdr[3], `"B"`) {
		t.Fatalf("sources header %s", csHdr[3])
	}
}

// TestCounterNATSCLI: the nats CLI's counter commands (which check the
// stream is a counter stream with direct get, then publish Nats-Incr and
// read the last message) work against leafbox.
func TestCounterNATSCLI(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	require.Equal(t, apiErrOf(t, apiReq(t, env.nc, "$JS.API.STREAM.CREATE.C", `{"name":"C","subjects":["c.>"],"allow_msg_counter":true,"allow_direct":true,"storage":"file"}`)), "")
	url := env.srv.ClientURL()
	for _, step := range []struct {
		args []string
		want string
	}{
		{[]string{"counter", "incr", "c.hits", "40"}, "40"},
		{[]string{"counter", "incr", "c.hits", "2"}, "42"},
		{[]string{"counter", "decr", "c.hits", "50"}, "-8"},
		{[]string{"counter", "incr", "c.big", "99999999999999999999999999"}, "99999999999999999999999999"},
		{[]string{"counter", "get", "c.hits"}, "-8"},
		{[]string{"counter", "get", "c.big"}, "99999999999999999999999999"},
	} {
		out, err := runNATS(t, url, step.args...)
		require.NoError(t, err, strings.Join(step.args, " ")+": "+out)
		require.Equal(t, strings.TrimSpace(out), step.want, strings.Join(step.args, " "))
	}
	out, err := runNATS(t, url, "counter", "view", "c.hits")
	require.NoError(t, err, out)
	if !strings.Contains(out, "-8") || !strings.Contains(out, "-50") {
		t.Fatalf("counter view:\n%s", out)
	}
}
