package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// srcPublish publishes n messages subj.<i> (i from first) and waits for
// each PubAck.
func srcPublish(t *testing.T, ctx context.Context, js njs.JetStream, subj string, first, n int) {
	t.Helper()
	for i := first; i < first+n; i++ {
		if _, err := js.Publish(ctx, subj+"."+strconv.Itoa(i), []byte(strconv.Itoa(i))); err != nil {
			t.Fatalf("publish %s.%d: %v", subj, i, err)
		}
	}
}

// srcWaitMsgs waits until the stream holds want messages.
func srcWaitMsgs(t *testing.T, ctx context.Context, js njs.JetStream, name string, want uint64) *njs.StreamInfo {
	t.Helper()
	for {
		s, err := js.Stream(ctx, name)
		if err == nil {
			info, err := s.Info(ctx)
			if err == nil && info.State.Msgs >= want {
				if info.State.Msgs > want {
					t.Fatalf("%s holds %d messages, want %d", name, info.State.Msgs, want)
				}
				return info
			}
		}
		select {
		case <-ctx.Done():
			var errs []string
			if s, err := js.Stream(context.Background(), name); err == nil {
				if info, err := s.Info(context.Background()); err == nil {
					for _, si := range append(info.Sources, info.Mirror) {
						if si != nil && si.Error != nil {
							errs = append(errs, si.Name+": "+si.Error.Error())
						}
					}
				}
			}
			t.Fatalf("%s: waiting for %d messages: %v %v", name, want, ctx.Err(), errs)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// srcReadAll fetches every message of the stream in order with an ordered
// consumer.
func srcReadAll(t *testing.T, ctx context.Context, js njs.JetStream, name string, n int) []njs.Msg {
	t.Helper()
	c, err := js.OrderedConsumer(ctx, name, njs.OrderedConsumerConfig{})
	require.NoError(t, err)
	var out []njs.Msg
	for len(out) < n {
		batch, err := c.Fetch(n-len(out), njs.FetchMaxWait(2*time.Second))
		require.NoError(t, err)
		for m := range batch.Messages() {
			out = append(out, m)
		}
		if err := batch.Error(); err != nil && !errors.Is(err, njs.ErrNoMessages) {
			t.Fatalf("fetch: %v", err)
		}
	}
	return out
}

// checkSourced verifies that the aggregate holds each origin's messages
// exactly once and in order, with nats-server's Nats-Stream-Source
// header (origin sequences rising), and returns how many came from each origin.
func checkSourced(t *testing.T, msgs []njs.Msg) map[string]int {
	t.Helper()
	last := map[string]uint64{}
	count := map[string]int{}
	for _, m := range msgs {
		h := m.Headers().Get("Nats-Stream-Source")
		f := strings.Split(h, " ")
		if len(f) != 6 {
			t.Fatalf("%s: Nats-Stream-Source %q", m.Subject(), h)
		}
		seq, err := strconv.ParseUint(f[1], 10, 64)
		require.NoError(t, err)
		if seq <= last[f[0]] {
			t.Fatalf("%s: origin %s seq %d after %d", m.Subject(), f[0], seq, last[f[0]])
		}
		last[f[0]] = seq
		count[f[0]]++
	}
	return count
}

func TestSourceAggregateResume(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	js := env.js
	_, err := js.CreateStream(ctx, njs.StreamConfig{Name: "A", Subjects: []string{"a.>"}, Storage: njs.FileStorage})
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "B", Subjects: []string{"b.>"}, Storage: njs.FileStorage})
	require.NoError(t, err)
	srcPublish(t, ctx, js, "a.x", 0, 20)
	srcPublish(t, ctx, js, "b.y", 0, 20)
	srcPublish(t, ctx, js, "a.skip", 0, 5) // filtered out below

	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "AGG", Storage: njs.FileStorage, Sources: []*njs.StreamSource{
		{Name: "A", FilterSubject: "a.x.*"},
		{Name: "B", SubjectTransforms: []njs.SubjectTransformConfig{{Source: "b.*.*", Destination: "agg.$2.{{wildcard(1)}}"}}},
	}})
	require.NoError(t, err)
	info := srcWaitMsgs(t, ctx, js, "AGG", 40)
	require.Equal(t, len(info.Sources), 2)
	for _, si := range info.Sources {
		if si.Lag != 0 || si.Active < 0 {
			t.Fatalf("source %s: lag %d active %v", si.Name, si.Lag, si.Active)
		}
	}
	require.Equal(t, info.Sources[0].FilterSubject, "a.x.*")
	require.Equal(t, info.Sources[1].SubjectTransforms[0].Destination, "agg.$2.{{wildcard(1)}}")

	// Restart: each source resumes after the last origin sequence stored.
	env.restart()
	srcPublish(t, ctx, js, "a.x", 20, 10)
	srcPublish(t, ctx, js, "b.y", 20, 10)
	srcWaitMsgs(t, ctx, js, "AGG", 60)
	msgs := srcReadAll(t, ctx, js, "AGG", 60)
	count := checkSourced(t, msgs)
	require.Equal(t, count["A"], 30)
	require.Equal(t, count["B"], 30)
	for _, m := range msgs {
		if strings.HasPrefix(m.Subject(), "b.") || strings.HasPrefix(m.Subject(), "a.skip") {
			t.Fatalf("subject %s not filtered or transformed", m.Subject())
		}
	}
	m := msgs[len(msgs)-1]
	if m.Subject() != "agg.29.y" && msgs[len(msgs)-2].Subject() != "agg.29.y" {
		t.Fatalf("transform: last subjects %s, %s", m.Subject(), msgs[len(msgs)-2].Subject())
	}
}

func TestSourceUpdateAndStart(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	js := env.js
	_, err := js.CreateStream(ctx, njs.StreamConfig{Name: "A", Subjects: []string{"a.>"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "B", Subjects: []string{"b.>"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	srcPublish(t, ctx, js, "a", 0, 10)
	srcPublish(t, ctx, js, "b", 0, 10)

	// opt_start_seq skips the first five of A.
	cfg := njs.StreamConfig{Name: "AGG", Storage: njs.MemoryStorage, Sources: []*njs.StreamSource{{Name: "A", OptStartSeq: 6}}}
	_, err = js.CreateStream(ctx, cfg)
	require.NoError(t, err)
	srcWaitMsgs(t, ctx, js, "AGG", 5)

	// STREAM.UPDATE adds B from a start time after its messages: only
	// what B receives later arrives.
	now := time.Now()
	cfg.Sources = append(cfg.Sources, &njs.StreamSource{Name: "B", OptStartTime: &now})
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	srcPublish(t, ctx, js, "b", 10, 3)
	info := srcWaitMsgs(t, ctx, js, "AGG", 8)
	require.Equal(t, len(info.Sources), 2)
	msgs := srcReadAll(t, ctx, js, "AGG", 8)
	require.Equal(t, msgs[0].Subject(), "a.5")
	require.Equal(t, msgs[5].Subject(), "b.10")
}

func TestMirrorKeepsSequences(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	js := env.js
	o, err := js.CreateStream(ctx, njs.StreamConfig{Name: "O", Subjects: []string{"o.>"}, Storage: njs.FileStorage})
	require.NoError(t, err)
	srcPublish(t, ctx, js, "o", 0, 10)
	require.NoError(t, o.DeleteMsg(ctx, 4))
	require.NoError(t, o.DeleteMsg(ctx, 5))

	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "M", Storage: njs.FileStorage, Mirror: &njs.StreamSource{Name: "O"}})
	require.NoError(t, err)
	info := srcWaitMsgs(t, ctx, js, "M", 8)
	require.Equal(t, info.State.LastSeq, uint64(10))
	if info.Mirror == nil || info.Mirror.Name != "O" {
		t.Fatalf("mirror info %+v", info.Mirror)
	}
	m, err := js.Stream(ctx, "M")
	require.NoError(t, err)
	got, err := m.GetMsg(ctx, 6)
	require.NoError(t, err)
	require.Equal(t, got.Subject, "o.5")
	if _, err := m.GetMsg(ctx, 4); err == nil {
		t.Fatal("mirror holds a sequence deleted at the origin")
	}

	// A mirror's configuration cannot change (10055).
	_, err = js.UpdateStream(ctx, njs.StreamConfig{Name: "M", Storage: njs.FileStorage, Mirror: &njs.StreamSource{Name: "B"}})
	var apiErr *njs.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10055 {
		t.Fatalf("update mirror: %v", err)
	}

	env.restart()
	srcPublish(t, ctx, js, "o", 10, 5)
	info = srcWaitMsgs(t, ctx, js, "M", 13)
	require.Equal(t, info.State.LastSeq, uint64(15))
	got, err = m.GetMsg(ctx, 15)
	require.NoError(t, err)
	require.Equal(t, got.Subject, "o.14")
	require.Equal(t, string(got.Data), fmt.Sprint(14))
}

// TestSourceInfoVsNatsServer runs one scenario on leafbox and on a real
// nats-server: an origin, a filtered and transformed source and a
// mirror. The stream infos' sources[] and mirror carry the same fields
// and values (active aside), and the stored Nats-Stream-Source headers
// are the same.
func TestSourceInfoVsNatsServer(t *testing.T) {
	t.Parallel()
	_, hnc, hjs := startNATSServerJS(t)
	env := newTestEnv(t, Config{})

	type result struct {
		agg, mir map[string]any
		header   string
	}
	run := func(nc *nats.Conn, js njs.JetStream) result {
		ctx := testCtx(t)
		_, err := js.CreateStream(ctx, njs.StreamConfig{Name: "A", Subjects: []string{"a.>"}, Storage: njs.MemoryStorage})
		require.NoError(t, err)
		srcPublish(t, ctx, js, "a.x", 1, 6)
		_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "AGG", Storage: njs.MemoryStorage, Sources: []*njs.StreamSource{
			{Name: "A", SubjectTransforms: []njs.SubjectTransformConfig{{Source: "a.*.*", Destination: "agg.$2"}}},
		}})
		require.NoError(t, err)
		_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "MIR", Storage: njs.MemoryStorage, Mirror: &njs.StreamSource{Name: "A", OptStartSeq: 2}})
		require.NoError(t, err)
		srcWaitMsgs(t, ctx, js, "AGG", 6)
		srcWaitMsgs(t, ctx, js, "MIR", 5)
		info := func(name string) map[string]any {
			for {
				m, err := nc.Request("$JS.API.STREAM.INFO."+name, nil, 2*time.Second)
				require.NoError(t, err)
				var v map[string]any
				require.NoError(t, json.Unmarshal(m.Data, &v))
				if src, ok := v["sources"].([]any); ok && src[0].(map[string]any)["lag"] != 0.0 {
					continue // not caught up yet
				}
				return v
			}
		}
		s, err := js.Stream(ctx, "AGG")
		require.NoError(t, err)
		m, err := s.GetMsg(ctx, 3)
		require.NoError(t, err)
		return result{agg: info("AGG"), mir: info("MIR"), header: m.Header.Get("Nats-Stream-Source")}
	}
	want, got := run(hnc, hjs), run(env.nc, env.js)
	// The sixth field is the origin's identity, a hash of its creation
	// time: the same length, a different value.
	gf, wf := strings.Fields(got.header), strings.Fields(want.header)
	if len(gf) != 6 || len(wf) != 6 || len(gf[5]) != len(wf[5]) || strings.Join(gf[:5], " ") != strings.Join(wf[:5], " ") {
		t.Fatalf("Nats-Stream-Source %q, nats-server %q", got.header, want.header)
	}
	shape := func(v any) string {
		m := v.(map[string]any)
		delete(m, "active")
		b, _ := json.Marshal(m)
		return string(b)
	}
	require.Equal(t, shape(got.agg["sources"].([]any)[0]), shape(want.agg["sources"].([]any)[0]))
	require.Equal(t, shape(got.mir["mirror"]), shape(want.mir["mirror"]))
	cfg := func(v map[string]any, key string) string {
		b, _ := json.Marshal(v["config"].(map[string]any)[key])
		return string(b)
	}
	require.Equal(t, cfg(got.agg, "sources"), cfg(want.agg, "sources"))
	require.Equal(t, cfg(got.mir, "mirror"), cfg(want.mir, "mirror"))
	st := func(v map[string]any) string {
		b, _ := json.Marshal(v["state"].(map[string]any)["first_seq"])
		return string(b)
	}
	require.Equal(t, st(got.mir), st(want.mir))
}

// TestSourceDeleteWhileCopying deletes a sourcing stream and a mirror's
// origin while they copy: nothing hangs, the mirror reports the missing
// origin in its info, and a recreated origin is mirrored again.
func TestSourceDeleteWhileCopying(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	js := env.js
	_, err := js.CreateStream(ctx, njs.StreamConfig{Name: "O", Subjects: []string{"o.>"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	srcPublish(t, ctx, js, "o", 0, 200)
	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "AGG", Storage: njs.MemoryStorage, Sources: []*njs.StreamSource{{Name: "O"}}})
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "M", Storage: njs.MemoryStorage, Mirror: &njs.StreamSource{Name: "O"}})
	require.NoError(t, err)
	require.NoError(t, js.DeleteStream(ctx, "AGG"))
	srcWaitMsgs(t, ctx, js, "M", 200)
	require.NoError(t, js.DeleteStream(ctx, "O"))
	m, err := js.Stream(ctx, "M")
	require.NoError(t, err)
	for {
		info, err := m.Info(ctx)
		require.NoError(t, err)
		if info.Mirror != nil && info.Mirror.Error != nil {
			require.Equal(t, info.Mirror.Error.ErrorCode, njs.ErrorCode(10059)) // stream not found
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("mirror info shows no error for a deleted origin: %+v", info.Mirror)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// FuzzSourceHeader feeds Nats-Stream-Source values and $JS.ACK replies to
// their parsers: no panic, and a parsed header round-trips its fields.
func FuzzSourceHeader(f *testing.F) {
	for _, s := range []string{
		"A 3 a.*.* agg.$2 a.x.3 Lqee9cpk", "HUBS:BtmuKjqK 1 > > hubs.1", "A 1", "", " ", "A x > >",
		"$JS.ACK.O.JS_SRC_x.1.5.5.1700000000000000000.0", "$JS.ACK.hub.acc.O.c.1.2.3.4.5.r", "$JS.ACK.O.c.1.-1.2.3.4",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if iname, seq, ident, ok := parseSourceHeader([]byte(v)); ok {
			f := strings.Split(v, " ")
			if n, err := strconv.ParseUint(f[1], 10, 64); err != nil || n != seq || iname != f[0]+" "+f[2]+" "+f[3] {
				t.Fatalf("%q parsed as %q seq %d", v, iname, seq)
			}
			if len(f) >= 6 && ident != f[5] {
				t.Fatalf("%q: identity %q", v, ident)
			}
		}
		parseAckReply(v)
		if tr, err := newSrcTransform(v, "x.>"); err == nil {
			tr.apply(v)
		}
	})
}

func TestSourceTransform(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, dst, in, want string }{
		{"a.*.*", "agg.$2.{{wildcard(1)}}", "a.x.1", "agg.1.x"},
		{"a.>", "b.>", "a.x.y", "b.x.y"},
		{"a.*", "", "a.q", "a.q"},
		{"a.*", "z.{{ Wildcard( 1 ) }}", "a.q", "z.q"},
		{"a.*", "z.$1", "a.q.r", ""},
		{">", "", "any.thing", "any.thing"},
	} {
		tr, err := newSrcTransform(c.src, c.dst)
		require.NoError(t, err)
		got, _ := tr.apply(c.in)
		require.Equal(t, got, c.want)
	}
	if _, err := newSrcTransform("a.*", "b.$2"); err == nil {
		t.Fatal("out-of-range wildcard accepted")
	}
}

// TestMirrorRefusals: a mirror takes no subjects (so nothing can be
// published to it directly) and no sources, with nats-server's errors;
// a stream cannot become a mirror by update.
func TestMirrorRefusals(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	for _, c := range []struct {
		cfg  njs.StreamConfig
		code njs.ErrorCode
	}{
		{njs.StreamConfig{Name: "M1", Subjects: []string{"m.>"}, Mirror: &njs.StreamSource{Name: "O"}}, 10034},
		{njs.StreamConfig{Name: "M2", Mirror: &njs.StreamSource{Name: "O"}, Sources: []*njs.StreamSource{{Name: "P"}}}, 10031},
	} {
		c.cfg.Storage = njs.MemoryStorage
		_, err := env.js.CreateStream(ctx, c.cfg)
		var apiErr *njs.APIError
		if !errors.As(err, &apiErr) || apiErr.ErrorCode != c.code {
			t.Fatalf("create %s: %v, want %d", c.cfg.Name, err, c.code)
		}
	}
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Storage: njs.MemoryStorage, Subjects: []string{"s"}})
	require.NoError(t, err)
	_, err = env.js.UpdateStream(ctx, njs.StreamConfig{Name: "S", Storage: njs.MemoryStorage, Mirror: &njs.StreamSource{Name: "O"}})
	var apiErr *njs.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10055 {
		t.Fatalf("update into a mirror: %v, want 10055", err)
	}
}
