package filestore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/internal/expiry"
	"github.com/leafbox/leafbox/store/memstore"
	"github.com/leafbox/leafbox/store/vfs"
)

func TestOpenRejectsInvalidConfig(t *testing.T) {
	for _, cfg := range []filestore.Config{
		{BlockSize: 10},
		{SyncInterval: -1},
		{Compression: 9},
		{Config: store.Config{MaxMsgs: -1}},
	} {
		if _, err := filestore.Open(vfs.NewMem(), "s", cfg); !errors.Is(err, store.ErrInvalidConfig) {
			t.Errorf("Open(%+v): %v, want ErrInvalidConfig", cfg, err)
		}
	}
	if got := (filestore.Config{SyncInterval: time.Second, Compression: filestore.CompressionS2}).String(); got != "block_size=4194304 sync=1s compression=s2 index_cache=2097152" {
		t.Errorf("String: %q", got)
	}
}

func TestCleanOpenReport(t *testing.T) {
	mem := vfs.NewStrictMem()
	s := mustOpen(t, mem, "s", filestore.Config{BlockSize: 256})
	for i := range 20 {
		storeAcked(s, i, nil)
	}
	s.Close()
	s = mustOpen(t, mem, "s", filestore.Config{BlockSize: 256})
	r := s.Recovered()
	if r.Blocks < 5 || r != (filestore.Report{Blocks: r.Blocks}) || !strings.Contains(r.String(), "truncated_bytes=0") {
		t.Fatalf("clean reopen reported %v", r)
	}
}

// TestReopenMatchesModel runs a random workload against a file stream and
// a memstore side by side, and now and then checkpoints or closes and
// reopens the file stream (from index files plus the active block's tail):
// the two must agree throughout.
func TestReopenMatchesModel(t *testing.T) {
	for _, c := range []filestore.Config{
		{BlockSize: 600},
		{BlockSize: 600, Compression: filestore.CompressionS2},
		{BlockSize: 600, SyncInterval: time.Hour},
	} {
		t.Run(c.Compression.String()+"/"+c.String(), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(9, 9))
			limits := store.Config{MaxMsgsPerSubject: 6, MaxBytes: 6000}
			c.Config = limits
			mem := vfs.NewStrictMem()
			model, _ := memstore.New(limits)
			s, err := filestore.Open(mem, "s", c)
			if err != nil {
				t.Fatal(err)
			}
			for round := range 40 {
				runWorkload(rng, s, model, 50)
				switch round % 3 {
				case 0:
					if err := s.Checkpoint(); err != nil {
						t.Fatal(err)
					}
				case 1:
					if err := s.Close(); err != nil {
						t.Fatal(err)
					}
					if s, err = filestore.Open(mem, "s", c); err != nil {
						t.Fatal(err)
					}
					if r := s.Recovered(); r.Lost() || r.TruncatedBytes != 0 {
						t.Fatalf("round %d: %v", round, r)
					}
				}
				if d := diffContent(takeDump(t, s), takeDump(t, model)); d != "" {
					t.Fatalf("round %d: %s", round, d)
				}
			}
			s.Close()
		})
	}
}

// TestEvictionsPersist checks that limit evictions are recorded: reopening
// with looser limits does not bring evicted messages back.
func TestEvictionsPersist(t *testing.T) {
	mem := vfs.NewStrictMem()
	cfg := filestore.Config{BlockSize: 300, Config: store.Config{MaxMsgs: 5, MaxMsgsPerSubject: 2}}
	s := mustOpen(t, mem, "s", cfg)
	for i := range 40 {
		storeAcked(s, i, nil)
	}
	want := takeDump(t, s)
	s.Close()
	s = mustOpen(t, mem, "s", filestore.Config{BlockSize: 300})
	requireSameContent(t, takeDump(t, s), want)
}

// TestCompaction purges most of a stream that spans many blocks: the dead
// blocks go, sparse ones are compacted, and the content is unchanged,
// also after a reopen.
func TestCompaction(t *testing.T) {
	for _, c := range []filestore.Compression{filestore.CompressionNone, filestore.CompressionS2} {
		t.Run(c.String(), func(t *testing.T) {
			mem := vfs.NewStrictMem()
			cfg := filestore.Config{BlockSize: 2048, Compression: c}
			s := mustOpen(t, mem, "s", cfg)
			for i := range 400 {
				subj := "drop"
				if i%10 == 0 {
					subj = "keep"
				}
				data := make([]byte, 40)
				for j := range data {
					data[j] = byte(i*7919 + j*104729)
				}
				if _, _, err := s.Store(subj, nil, data, 0); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			before := blockBytes(t, mem)
			if n, err := s.Purge(store.PurgeOptions{Subject: "drop"}); err != nil || n != 360 {
				t.Fatalf("Purge: %d, %v", n, err)
			}
			// Removing the 5 oldest "keep" messages leaves whole blocks dead.
			for seq := uint64(1); seq <= 41; seq += 10 {
				s.Remove(seq, false)
			}
			if err := s.Checkpoint(); err != nil {
				t.Fatal(err)
			}
			after := blockBytes(t, mem)
			if after*3 > before {
				t.Fatalf("block files %d bytes before, %d after purging 90%%", before, after)
			}
			want := takeDump(t, s)
			if len(want.msgs) != 35 {
				t.Fatalf("%d messages left", len(want.msgs))
			}
			s.Close()
			s = mustOpen(t, mem, "s", cfg)
			requireSameContent(t, takeDump(t, s), want)
			t.Logf("%d -> %d bytes in %d blocks", before, after, len(names(t, mem, "s", ".blk")))
		})
	}
}

func blockBytes(t *testing.T, fsys vfs.FS) int64 {
	var n int64
	for name, size := range files(t, fsys, "s") {
		if strings.HasSuffix(name, ".blk") {
			n += size
		}
	}
	return n
}

// TestConcurrentUse runs writers, readers, removers and maintenance at
// once (run with -race); the stream must then reopen to the same content.
func TestConcurrentUse(t *testing.T) {
	for _, c := range []filestore.Config{{BlockSize: 1024}, {BlockSize: 1024, Compression: filestore.CompressionS2, SyncInterval: time.Millisecond}} {
		t.Run(c.Compression.String(), func(t *testing.T) {
			mem := vfs.NewStrictMem()
			s := mustOpen(t, mem, "s", c)
			var wg, writers sync.WaitGroup
			stop := make(chan struct{})
			for w := range 4 {
				writers.Go(func() {
					for i := range 300 {
						if _, _, err := s.Store(fmt.Sprintf("w.%d.%d", w, i%7), nil, fmt.Appendf(nil, "%d-%d", w, i), 0); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			background := func(f func(rng *rand.Rand)) {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
					for {
						select {
						case <-stop:
							return
						default:
							f(rng)
						}
					}
				})
			}
			background(func(rng *rand.Rand) {
				last := s.State().LastSeq
				if last == 0 {
					return
				}
				seq := 1 + rng.Uint64N(last)
				m, err := s.Load(seq, nil)
				if err == nil && m.Seq != seq {
					t.Errorf("Load(%d) returned %d", seq, m.Seq)
				} else if err != nil && !errors.Is(err, store.ErrDeleted) {
					t.Errorf("Load(%d): %v", seq, err)
				}
				if _, err := s.LoadNext("w.*.3", seq, nil); err != nil && !errors.Is(err, store.ErrNotFound) {
					t.Errorf("LoadNext: %v", err)
				}
				s.FilteredState("w.1.>", seq)
			})
			background(func(rng *rand.Rand) {
				if last := s.State().LastSeq; last > 0 {
					s.Remove(1+rng.Uint64N(last), rng.IntN(4) == 0)
				}
				if rng.IntN(50) == 0 {
					s.Purge(store.PurgeOptions{Subject: fmt.Sprintf("w.%d.>", rng.IntN(4)), Keep: 5})
				}
			})
			background(func(rng *rand.Rand) {
				if err := s.Checkpoint(); err != nil {
					t.Error(err)
				}
				time.Sleep(time.Millisecond)
			})
			writers.Wait()
			close(stop)
			wg.Wait()
			want := takeDump(t, s)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = mustOpen(t, mem, "s", c)
			requireSameContent(t, takeDump(t, s), want)
		})
	}
}

// TestSequencesSurviveReopen checks that what a stream says about its
// sequences after removals and purges is on disk: reopening changes
// neither FirstSeq nor LastSeq, and the next sequence follows on.
func TestSequencesSurviveReopen(t *testing.T) {
	cases := []struct {
		name      string
		do        func(s *filestore.Stream)
		last, msg uint64
	}{
		{"remove last", func(s *filestore.Stream) { s.Remove(30, false) }, 30, 29},
		{"remove all", func(s *filestore.Stream) {
			for seq := uint64(1); seq <= 30; seq++ {
				s.Remove(seq, seq%2 == 0)
			}
		}, 30, 0},
		{"purge all", func(s *filestore.Stream) { s.Purge(store.PurgeOptions{}) }, 30, 0},
		{"purge below", func(s *filestore.Stream) { s.Purge(store.PurgeOptions{Sequence: 25}) }, 30, 6},
		{"purge past end", func(s *filestore.Stream) { s.Purge(store.PurgeOptions{Sequence: 100}) }, 99, 0},
		{"purge subject", func(s *filestore.Stream) { s.Purge(store.PurgeOptions{Subject: "dev.4.temp"}) }, 30, 24},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewStrictMem()
			cfg := filestore.Config{BlockSize: 300}
			s := mustOpen(t, mem, "s", cfg)
			for i := range 30 {
				storeAcked(s, i, nil)
			}
			c.do(s)
			want := takeDump(t, s)
			if want.state.LastSeq != c.last || want.state.Msgs != c.msg {
				t.Fatalf("before reopen: %+v", want.state)
			}
			s.Close()
			s = mustOpen(t, mem, "s", cfg)
			requireSameContent(t, takeDump(t, s), want)
			if seq, _, err := s.Store("next", nil, nil, 0); err != nil || seq != c.last+1 {
				t.Fatalf("next Store: %d, %v", seq, err)
			}
		})
	}
}

// TestTTLSurvivesReopen checks that per-message TTLs and the "never"
// exemption are on disk.
// The stream runs on a synctest bubble's clock: "short" and "plain" go at
// the reopened stream's lower MaxAge, "never" stays.
func TestTTLSurvivesReopen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lag = expiry.Resolution // how late a timer may fire
		epoch := time.Now()
		mem := vfs.NewStrictMem()
		cfg := filestore.Config{Config: store.Config{AllowMsgTTL: true, MaxAge: time.Hour}}
		s := mustOpen(t, mem, "s", cfg)
		s.Store("short", nil, nil, int64(150*time.Millisecond))
		s.Store("never", nil, nil, -1)
		s.Store("plain", nil, nil, 0)
		s.Close()
		cfg.MaxAge = 100 * time.Millisecond
		s = mustOpen(t, mem, "s", cfg)
		for _, step := range []struct {
			at   time.Duration
			msgs uint64
		}{
			{100*time.Millisecond - time.Nanosecond, 3},
			{100*time.Millisecond + lag, 1}, // short and plain, by the new MaxAge
			{time.Hour, 1},                  // never is exempt
		} {
			time.Sleep(step.at - time.Since(epoch))
			synctest.Wait()
			if got := s.State().Msgs; got != step.msgs {
				t.Fatalf("%v after storing: %d messages, want %d", step.at, got, step.msgs)
			}
		}
		if m, err := s.LoadNext("", 0, nil); err != nil || m.Subject != "never" {
			t.Fatalf("left: %v, %v", m, err)
		}
	})
}

// TestSyncDeferred checks the store.Syncer ability: a stream with a
// SyncInterval defers its fsync to Sync, one without syncs in Store.
func TestSyncDeferred(t *testing.T) {
	for _, tc := range []struct {
		interval time.Duration
		deferred bool
	}{{0, false}, {time.Hour, true}} {
		s := mustOpen(t, vfs.NewMem(), "s", filestore.Config{Config: store.Config{Name: "s"}, SyncInterval: tc.interval})
		var st store.Stream = s
		sy, ok := st.(store.Syncer)
		if !ok {
			t.Fatal("a file stream is not a store.Syncer")
		}
		if got := sy.SyncDeferred(); got != tc.deferred {
			t.Fatalf("SyncInterval %v: SyncDeferred %v, want %v", tc.interval, got, tc.deferred)
		}
		if _, _, err := s.Store("a", nil, []byte("x"), 0); err != nil {
			t.Fatal(err)
		}
		if err := sy.Sync(); err != nil {
			t.Fatal(err)
		}
	}
}
