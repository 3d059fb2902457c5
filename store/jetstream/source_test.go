package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

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
		if len(f) != 5 {
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
