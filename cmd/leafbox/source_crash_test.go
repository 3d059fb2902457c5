//go:build unix

package main

import (
	"context"
	"fmt"
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
	for {
		a, errA := js.Stream(ctx, "AGG")
		m, errM := js.Stream(ctx, "M")
		if errA == nil && errM == nil && a.CachedInfo().State.Msgs >= killAt && m.CachedInfo().State.Msgs >= killAt {
			t.Logf("kill -9 with AGG at %d, M at %d of %d", a.CachedInfo().State.Msgs, m.CachedInfo().State.Msgs, origin)
			break
		}
		select {
		case <-ctx.Done():
			var ai, mi any
			if errA == nil {
				ai = a.CachedInfo()
			}
			if errM == nil {
				mi = m.CachedInfo()
			}
			t.Fatalf("copies did not start: %v %v / %+v %+v; log:\n%s", errA, errM, ai, mi, p.log())
		case <-time.After(5 * time.Millisecond):
		}
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	p.wait()

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

	// The aggregate holds each origin sequence once, in order.
	c, err := js2.OrderedConsumer(ctx, "AGG", jetstream.OrderedConsumerConfig{})
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
			if len(h) != 6 || h[0] != "O" || h[1] != strconv.Itoa(want) || string(msg.Data()) != strconv.Itoa(want) {
				t.Fatalf("AGG message %d: header %q data %q", want, h, msg.Data())
			}
			want++
		}
	}
	// The mirror keeps the origin's sequences.
	m, err := js2.Stream(ctx, "M")
	if err != nil {
		t.Fatal(err)
	}
	for _, seq := range []uint64{1, killAt, origin, total} {
		got, err := m.GetMsg(ctx, seq)
		if err != nil || string(got.Data) != fmt.Sprint(seq) {
			t.Fatalf("mirror seq %d: %v %v", seq, got, err)
		}
	}
	stopJS(t, p2)
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
