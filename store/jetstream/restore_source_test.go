package jetstream

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/store/jsapi"
)

// originSeqs returns, for each message of the stream in order, the
// origin sequence its Nats-Stream-Source header names (a mirror's: its
// own sequence), skipping the stream's own messages, and fails on a
// message copied twice.
func originSeqs(t *testing.T, ctx context.Context, js njs.JetStream, name string, mirror bool) []uint64 {
	t.Helper()
	s, err := js.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	seen := map[uint64]bool{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("%s seq %d: %v", name, seq, err)
		}
		oseq := seq
		if !mirror {
			h := m.Header.Get(jsapi.HeaderStreamSource)
			if h == "" && !strings.HasPrefix(m.Subject, "origin.") {
				continue // the stream's own
			}
			_, oseq, _, _ = parseSourceHeader([]byte(h))
		}
		if oseq == 0 || seen[oseq] {
			t.Fatalf("%s seq %d: origin sequence %d (header %q) is missing or copied twice", name, seq, oseq, m.Header.Get(jsapi.HeaderStreamSource))
		}
		if want := fmt.Sprintf("origin.%d", oseq); m.Subject != want {
			t.Fatalf("%s seq %d holds %s, want %s", name, seq, m.Subject, want)
		}
		seen[oseq] = true
		out = append(out, oseq)
	}
	return out
}

// A stream with sources and a mirror of a local origin, backed up with
// `nats stream backup`, deleted while the origin takes more messages and
// restored with `nats stream restore`, resumes copying where its stored
// Nats-Stream-Source headers (the mirror: its last sequence) say, as
// nats-server does: every origin message exactly once, none twice.
func TestRestoreResumesSourcesAndMirror(t *testing.T) {
	ctx := testCtx(t)
	env := newTestEnv(t, Config{})
	url := env.srv.ClientURL()
	if _, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "ORIGIN", Subjects: []string{"origin.>"}, Storage: njs.FileStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "SRC", Subjects: []string{"local.>"}, Storage: njs.FileStorage,
		Sources: []*njs.StreamSource{{Name: "ORIGIN"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "MIR", Storage: njs.FileStorage, Mirror: &njs.StreamSource{Name: "ORIGIN"}}); err != nil {
		t.Fatal(err)
	}
	srcPublish(t, ctx, env.js, "origin", 1, 10)
	srcWaitMsgs(t, ctx, env.js, "SRC", 10)
	srcWaitMsgs(t, ctx, env.js, "MIR", 10)
	// A message of SRC's own, between sourced ones.
	if _, err := env.js.Publish(ctx, "local.x", []byte("own")); err != nil {
		t.Fatal(err)
	}

	backups := t.TempDir()
	for _, name := range []string{"SRC", "MIR"} {
		dir := filepath.Join(backups, name)
		if out, err := runNATS(t, url, "stream", "backup", name, dir, "--no-progress"); err != nil {
			t.Fatalf("backup %s: %v\n%s", name, err, out)
		}
		if err := env.js.DeleteStream(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	srcPublish(t, ctx, env.js, "origin", 11, 5)
	for _, name := range []string{"SRC", "MIR"} {
		if out, err := runNATS(t, url, "stream", "restore", filepath.Join(backups, name), "--no-progress"); err != nil {
			t.Fatalf("restore %s: %v\n%s", name, err, out)
		}
	}
	// The marker goes after the restores: sources copy in origin order,
	// so once it is in, any repeat of 1..15 would be in before it.
	srcPublish(t, ctx, env.js, "origin", 16, 1)
	srcWaitMsgs(t, ctx, env.js, "SRC", 17)
	srcWaitMsgs(t, ctx, env.js, "MIR", 16)
	src := originSeqs(t, ctx, env.js, "SRC", false)
	if got := fmt.Sprint(src); got != "[1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16]" {
		t.Fatalf("SRC copied origin sequences %s", got)
	}
	mir := originSeqs(t, ctx, env.js, "MIR", true)
	if got := fmt.Sprint(mir); got != "[1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16]" {
		t.Fatalf("MIR holds origin sequences %s", got)
	}
	s, err := env.js.Stream(ctx, "SRC")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := s.GetMsg(ctx, 11); err != nil || m.Subject != "local.x" {
		t.Fatalf("SRC seq 11: %v %v, want its own local.x", m, err)
	}
	if info := s.CachedInfo(); len(info.Sources) != 1 || info.Sources[0].Error != nil {
		t.Fatalf("SRC sources after restore: %+v", info.Sources)
	}
	if !strings.Contains(fmt.Sprint(s.CachedInfo().Config.Sources[0].Name), "ORIGIN") {
		t.Fatalf("SRC config: %+v", s.CachedInfo().Config)
	}
}
