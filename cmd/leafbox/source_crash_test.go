//go:build unix

package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestSourceMirrorKill9Resume kills the server with SIGKILL while a
// sourcing stream and a mirror are copying an origin, restarts it on the
// same store and requires both to finish with every origin message
// exactly once and in order: the resume point comes from what the store
// holds (the last Nats-Stream-Source header, the mirror's last sequence).
func TestSourceMirrorKill9Resume(t *testing.T) {
	const (
		origin    = 3000 // messages in the origin before the copies start
		killAt    = 200  // copied messages seen before the kill
		afterKill = 100  // published after the restart
	)
	dir := t.TempDir()
	cfg := jsTestConfig(t, dir, filepath.Join(dir, "store"))
	ctx := testContext(t)

	p, u := startJS(t, cfg, dir)
	_, js := jsConnect(t, u)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "O", Subjects: []string{"o.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= origin; i++ {
		f, err := js.PublishAsync("o."+strconv.Itoa(i%7), []byte(strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if i == origin {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				t.Fatal(err)
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal(ctx.Err())
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "AGG", Storage: jetstream.FileStorage, Sources: []*jetstream.StreamSource{{Name: "O"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "M", Storage: jetstream.FileStorage, Mirror: &jetstream.StreamSource{Name: "O"}})
	if err != nil {
		t.Fatal(err)
	}
	awaitCopiesThenKill(t, ctx, js, p, killAt, origin)

	p2, u2 := startJS(t, cfg, dir)
	_, js2 := jsConnect(t, u2)
	for i := origin + 1; i <= origin+afterKill; i++ {
		if _, err := js2.Publish(ctx, "o."+strconv.Itoa(i%7), []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	const total = origin + afterKill
	waitStream(t, ctx, js2, "AGG", total)
	waitStream(t, ctx, js2, "M", total)

	// The aggregate holds each origin sequence once, in order; the mirror
	// keeps the origin's sequences.
	checkAggregate(t, ctx, js2, total, func(stream string) bool { return stream == "O" })
	checkMirror(t, ctx, js2, 1, killAt, origin, total)
	stopJS(t, p2)
}

// awaitCopiesThenKill waits until the streams AGG and M each hold at
// least killAt messages, then kills the server p with SIGKILL.
func awaitCopiesThenKill(t *testing.T, ctx context.Context, js jetstream.JetStream, p *proc, killAt, origin uint64) {
	t.Helper()
	for {
		a, errA := js.Stream(ctx, "AGG")
		m, errM := js.Stream(ctx, "M")
		if errA == nil && errM == nil && a.CachedInfo().State.Msgs >= killAt && m.CachedInfo().State.Msgs >= killAt {
			t.Logf("kill -9 with AGG at %d, M at %d of %d", a.CachedInfo().State.Msgs, m.CachedInfo().State.Msgs, origin)
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("copies did not start: %v %v; log:\n%s", errA, errM, p.log())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait()
}

// checkAggregate reads the stream AGG and requires messages 1..total,
// each once and in order, with a Nats-Stream-Source header whose stream
// token is accepted by source and whose sequence is the message's.
func checkAggregate(t *testing.T, ctx context.Context, js jetstream.JetStream, total int, source func(stream string) bool) {
	t.Helper()
	c, err := js.OrderedConsumer(ctx, "AGG", jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= total; {
		batch, err := c.Fetch(500, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		for msg := range batch.Messages() {
			h := strings.Fields(msg.Headers().Get("Nats-Stream-Source"))
			if len(h) != 6 || !source(h[0]) || h[1] != strconv.Itoa(want) || string(msg.Data()) != strconv.Itoa(want) {
				t.Fatalf("AGG message %d: header %q data %q", want, h, msg.Data())
			}
			want++
		}
	}
}

// checkMirror requires the mirror M to hold, at each of seqs, the
// origin message of that sequence.
func checkMirror(t *testing.T, ctx context.Context, js jetstream.JetStream, seqs ...uint64) {
	t.Helper()
	m, err := js.Stream(ctx, "M")
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range seqs {
		got, err := m.GetMsg(ctx, seq)
		if err != nil || string(got.Data) != strconv.FormatUint(seq, 10) {
			t.Fatalf("mirror seq %d: %v %v", seq, got, err)
		}
	}
}

// waitStream waits until the stream holds exactly want messages; more
// fails at once.
func waitStream(t *testing.T, ctx context.Context, js jetstream.JetStream, name string, want uint64) {
	t.Helper()
	for {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info := s.CachedInfo()
		if info.State.Msgs > want {
			t.Fatalf("%s holds %d messages, want %d", name, info.State.Msgs, want)
		}
		if info.State.Msgs == want {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s holds %d messages, want %d: %v", name, info.State.Msgs, want, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
