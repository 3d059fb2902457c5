package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/leafbox/leafbox/store/jsapi"
)

// batchMsg builds one message of atomic batch id at position seq (0: no
// Nats-Batch-Sequence); commit is the Nats-Batch-Commit value ("" none);
// kv are further header pairs.
func batchMsg(subj, id string, seq int, commit string, data string, kv ...string) *nats.Msg {
	m := nats.NewMsg(subj)
	m.Data = []byte(data)
	m.Header.Set(jsapi.HeaderBatchID, id)
	if seq > 0 {
		m.Header.Set(jsapi.HeaderBatchSeq, strconv.Itoa(seq))
	}
	if commit != "" {
		m.Header.Set(jsapi.HeaderBatchCommit, commit)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Header.Set(kv[i], kv[i+1])
	}
	return m
}

// batchRequest sends m and returns the reply's body ("" for the empty
// reply of a staged message).
func batchRequest(t *testing.T, ctx context.Context, nc *nats.Conn, m *nats.Msg) string {
	t.Helper()
	r, err := nc.RequestMsgWithContext(ctx, m)
	require.NoError(t, err)
	return string(r.Data)
}

// atomicBatchTranscript runs the same atomic batch publishes against the
// server behind nc (batch timeout 1s) and returns every reply, the
// abandoned-batch advisories and the stored messages, as text.
func atomicBatchTranscript(t *testing.T, nc *nats.Conn) []string {
	ctx := testCtx(t)
	js, err := njs.New(nc)
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "B", Subjects: []string{"b.>"}, Storage: njs.FileStorage, AllowAtomicPublish: true})
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "N", Subjects: []string{"n.>"}, Storage: njs.FileStorage})
	require.NoError(t, err)
	advs := make(chan *nats.Msg, 16)
	sub, err := nc.ChanSubscribe(jsapi.AdvisoryStreamBatchAbandoned+".B", advs)
	require.NoError(t, err)
	defer sub.Unsubscribe()
	require.NoError(t, nc.Flush())

	var out []string
	say := func(step, reply string) { out = append(out, step+": "+reply) }
	req := func(step string, m *nats.Msg) { say(step, batchRequest(t, ctx, nc, m)) }

	// A good batch, committed with its last message.
	req("good 1", batchMsg("b.1", "good", 1, "", "g1"))
	req("good 2", batchMsg("b.2", "good", 2, "", "g2"))
	req("good 3", batchMsg("b.1", "good", 3, "1", "g3"))
	// Committed by an end-of-batch marker, which is not stored.
	req("eob 1", batchMsg("b.3", "eob", 1, "", "e1"))
	req("eob 2", batchMsg("b.3", "eob", 2, "", "e2"))
	req("eob 3", batchMsg("b.3", "eob", 3, "eob", "marker"))
	req("eob alone", batchMsg("b.3", "eob1", 1, "eob", ""))
	// A gap abandons the batch; its commit then finds no batch.
	req("gap 1", batchMsg("b.4", "gap", 1, "", "x"))
	req("gap 3", batchMsg("b.4", "gap", 3, "", "x"))
	req("gap 4", batchMsg("b.4", "gap", 4, "1", "x"))
	req("bad commit", batchMsg("b.4", "badc", 1, "yes", "x"))
	req("no seq", batchMsg("b.4", "noseq", 0, "1", "x"))
	req("long id", batchMsg("b.4", strings.Repeat("i", 65), 1, "1", "x"))
	req("empty id", batchMsg("b.4", "", 1, "1", "not a batch"))
	req("64 id", batchMsg("b.4", strings.Repeat("i", 64), 1, "1", "id64"))
	// Checks at the commit: nothing of a failing batch is stored.
	req("dup 1", batchMsg("b.5", "dup", 1, "", "x", jsapi.HeaderMsgID, "m1"))
	req("dup 2", batchMsg("b.5", "dup", 2, "1", "x", jsapi.HeaderMsgID, "m1"))
	req("msgid 1", batchMsg("b.5", "msgid", 1, "1", "m", jsapi.HeaderMsgID, "m2"))
	req("msgid again", batchMsg("b.5", "msgid2", 1, "1", "m", jsapi.HeaderMsgID, "m2"))
	req("els first", batchMsg("b.6", "els", 1, "", "x", jsapi.HeaderExpectedLastSeq, "999"))
	req("els first commit", batchMsg("b.6", "els", 2, "1", "x"))
	req("els second 1", batchMsg("b.6", "els2", 1, "", "x"))
	req("els second 2", batchMsg("b.6", "els2", 2, "1", "x", jsapi.HeaderExpectedLastSeq, "9"))
	req("els right second 1", batchMsg("b.6", "els3", 1, "", "x"))
	req("els right second 2", batchMsg("b.6", "els3", 2, "1", "x", jsapi.HeaderExpectedLastSeq, "8"))
	req("els ok", batchMsg("b.6", "els4", 1, "", "els", jsapi.HeaderExpectedLastSeq, "7"))
	req("els ok 2", batchMsg("b.6", "els4", 2, "1", "els"))
	req("elss 1", batchMsg("b.7", "elss", 1, "", "x"))
	req("elss 2", batchMsg("b.7", "elss", 2, "1", "x", jsapi.HeaderExpectedLastSubjSeq, "0"))
	req("elmid", batchMsg("b.7", "elmid", 1, "1", "x", jsapi.HeaderExpectedLastMsgID, "m2"))
	req("rollup", batchMsg("b.7", "roll", 1, "1", "x", jsapi.HeaderRollup, "sub"))
	// Too many messages: 1000 staged without replies, the 1001st refused.
	for i := 1; i <= 1000; i++ {
		require.NoError(t, nc.PublishMsg(batchMsg("b.8", "big", i, "", "x")))
	}
	req("big 1001", batchMsg("b.8", "big", 1001, "1", "x"))
	req("big 1002", batchMsg("b.8", "big", 1002, "1", "x"))
	req("unknown 1001", batchMsg("b.8", "nobatch", 1001, "1", "x"))
	// A stream without allow_atomic.
	req("disabled", batchMsg("n.1", "dis", 1, "1", "x"))
	// No commit: the batch is abandoned after the timeout.
	req("timeout 1", batchMsg("b.9", "to", 1, "", "x"))
	var got []string
	for len(got) < 4 { // eob1, gap, big and (after a second) to
		select {
		case m := <-advs:
			var a jsapi.StreamBatchAbandonedAdvisory
			require.NoError(t, json.Unmarshal(m.Data, &a))
			got = append(got, fmt.Sprintf("advisory %s %s %s %s", a.Type, a.Stream, a.Batch, a.Reason))
		case <-ctx.Done():
			t.Fatalf("advisories: got %q", got)
		}
	}
	sort.Strings(got)
	out = append(out, got...)
	req("timeout 2", batchMsg("b.9", "to", 2, "1", "x"))
	// At most 50 batches in flight per stream.
	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "C", Subjects: []string{"c.>"}, Storage: njs.MemoryStorage, AllowAtomicPublish: true})
	require.NoError(t, err)
	for i := range 50 {
		if r := batchRequest(t, ctx, nc, batchMsg("c.1", fmt.Sprint("inflight", i), 1, "", "x")); r != "" {
			t.Fatalf("batch %d: %s", i, r)
		}
	}
	req("inflight 51", batchMsg("c.1", "inflight50", 1, "", "x"))
	req("inflight commit", batchMsg("c.1", "inflight0", 2, "1", "x"))
	req("inflight 51 again", batchMsg("c.1", "inflight50", 1, "1", "x"))

	s, err := js.Stream(ctx, "B")
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	out = append(out, fmt.Sprintf("state msgs=%d first=%d last=%d", info.State.Msgs, info.State.FirstSeq, info.State.LastSeq))
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			out = append(out, fmt.Sprintf("msg %d: %v", seq, err))
			continue
		}
		var hs []string
		for k, v := range m.Header {
			hs = append(hs, k+"="+strings.Join(v, ","))
		}
		slices.Sort(hs)
		out = append(out, fmt.Sprintf("msg %d %s %q %s", seq, m.Subject, m.Data, hs))
	}
	return out
}

// TestAtomicBatchMatchesNatsServer runs the same atomic batch publishes
// against nats-server v2.15.2 and leafbox: a good batch, one committed by
// "eob", gaps, invalid commits and ids, duplicate message ids, expected
// sequences, an unsupported header, a batch too large, one to a stream
// without allow_atomic and one abandoned after the timeout. Replies,
// advisories and stored messages must be the same.
func TestAtomicBatchMatchesNatsServer(t *testing.T) {
	t.Parallel()
	hub := leaftest.StartHub(t, leaftest.HubOptions{Config: fmt.Sprintf("jetstream { store_dir: %q, limits { batch { timeout: \"1s\" } } }", filepath.Join(t.TempDir(), "js"))})
	hnc, err := nats.Connect(hub.ClientURL())
	require.NoError(t, err)
	t.Cleanup(hnc.Close)
	env := newTestEnv(t, Config{BatchTimeout: time.Second})
	var ref, got []string
	t.Run("nats-server", func(t *testing.T) { ref = atomicBatchTranscript(t, hnc) })
	t.Run("leafbox", func(t *testing.T) { got = atomicBatchTranscript(t, env.nc) })
	if t.Failed() {
		return
	}
	compareTranscripts(t, ref, got)
	if testing.Verbose() {
		t.Logf("nats-server:\n%s", strings.Join(ref, "\n"))
	}
}
