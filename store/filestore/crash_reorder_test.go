package filestore_test

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// Limit evictions and power cuts on a disk that writes pages back in any
// order. The guarantee these tests hold the stream to, for a limit of L
// messages per group (per subject for MaxMsgsPerSubject, the whole stream
// for MaxMsgs) with SyncInterval 0: after any power cut, every
// acknowledged message is recovered unless L recovered messages of its
// group have higher sequences (a later message that survived evicted it
// legitimately), and every recovered message is one that was stored. In
// particular a one-per-subject key always holds its last acknowledged
// value or a later one it was being replaced by, never nothing.

// limitMsg is one message a limit scenario stored or tried to store.
type limitMsg struct {
	subj, data string
	seq        uint64 // 0 when Store failed
	acked      bool
}

// limitScenario is a stream configuration, a durable history and then a
// sequence of stores the power cut interrupts.
type limitScenario struct {
	name  string
	cfg   filestore.Config
	group func(subj string) string
	limit int
	setup []string // subjects stored (and acknowledged) before the cut is armed
	cut   []string // subjects stored while it may strike
}

// run performs sc with the k-th mutating operation after setup failing
// along with every later one, then cuts the power keeping the unsynced
// changes keep selects. It returns the messages, the recovered stream,
// how many unsynced changes the cut saw, and whether the failure fired.
func (sc limitScenario) run(t *testing.T, k int, keep func(int) bool) ([]limitMsg, *filestore.Stream, int, bool) {
	t.Helper()
	mem := vfs.NewStrictMem()
	var armed atomic.Bool
	var ops atomic.Int64
	var fired atomic.Bool
	fsys := vfs.Inject(mem, func(op vfs.Op, _ string) error {
		if !armed.Load() || !op.Mutates() {
			return nil
		}
		if ops.Add(1) > int64(k) {
			fired.Store(true)
			return errPowerCut
		}
		return nil
	})
	s, err := filestore.Open(fsys, "s", sc.cfg)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []limitMsg
	for i, subj := range sc.setup {
		data := fmt.Sprintf("%s#%d", subj, i)
		seq, err := storeSynced(s, subj, data)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, limitMsg{subj, data, seq, true})
	}
	armed.Store(true)
	for i, subj := range sc.cut {
		data := fmt.Sprintf("%s#%d", subj, len(sc.setup)+i)
		seq, err := storeSynced(s, subj, data)
		msgs = append(msgs, limitMsg{subj, data, seq, err == nil})
		if err != nil {
			break
		}
	}
	s.Close()
	n := mem.UnsyncedChanges()
	mem.PowerCut(keep)
	r, err := filestore.Open(mem, "s", sc.cfg)
	if err != nil {
		t.Fatalf("Open after power cut: %v\n%s", err, mem)
	}
	t.Cleanup(func() { r.Close() })
	return msgs, r, n, fired.Load()
}

// storeSynced stores a message and, on a stream with a SyncInterval,
// syncs: it is acknowledged when both succeed.
func storeSynced(s *filestore.Stream, subj, data string) (uint64, error) {
	seq, _, err := s.Store(subj, nil, []byte(data), 0)
	if err == nil && s.SyncDeferred() {
		err = s.Sync()
	}
	return seq, err
}

// check verifies the guarantee on the recovered stream r.
func (sc limitScenario) check(t *testing.T, msgs []limitMsg, r store.Stream) error {
	stored := make(map[string]bool)
	for _, m := range msgs {
		stored[m.subj+" "+m.data] = true
	}
	type rec struct {
		seq  uint64
		subj string
	}
	var got []rec
	present := make(map[uint64]string)
	st := r.State()
	for seq := st.FirstSeq; seq <= st.LastSeq && st.Msgs > 0; seq++ {
		sm, err := r.Load(seq, nil)
		if err != nil {
			continue
		}
		if !stored[sm.Subject+" "+string(sm.Data)] {
			return fmt.Errorf("recovered seq %d %s %q was never stored", seq, sm.Subject, sm.Data)
		}
		got = append(got, rec{seq, sm.Subject})
		present[seq] = string(sm.Data)
	}
	for _, m := range msgs {
		if !m.acked {
			continue
		}
		if present[m.seq] == m.data {
			continue
		}
		later := 0
		for _, g := range got {
			if g.seq > m.seq && sc.group(g.subj) == sc.group(m.subj) {
				later++
			}
		}
		if later < sc.limit {
			return fmt.Errorf("acknowledged seq %d %s %q lost: only %d later messages of its group survived (limit %d); recovered %v",
				m.seq, m.subj, m.data, later, sc.limit, got)
		}
	}
	return nil
}

var limitScenarios = []limitScenario{
	{
		name:  "per-subject=1",
		cfg:   withLimits(filestore.Config{BlockSize: 1 << 20}, store.Config{MaxMsgsPerSubject: 1}),
		group: func(s string) string { return s },
		limit: 1,
		setup: []string{"kv.a", "kv.b"},
		cut:   []string{"kv.a", "kv.a", "kv.b"},
	},
	{
		// 54-byte records in 256-byte blocks: the replacements roll
		// blocks, so evictions and new records share new files.
		name:  "per-subject=1/small-blocks",
		cfg:   withLimits(filestore.Config{BlockSize: 256}, store.Config{MaxMsgsPerSubject: 1}),
		group: func(s string) string { return s },
		limit: 1,
		setup: []string{"kv.a", "kv.b", "kv.c", "kv.d"},
		cut:   []string{"kv.a", "kv.a", "kv.b", "kv.c"},
	},
	{
		// Acknowledged at an explicit Sync; the evictions' tombstones wait
		// for it.
		name:  "per-subject=1/async",
		cfg:   withLimits(filestore.Config{BlockSize: 1 << 20, SyncInterval: time.Hour}, store.Config{MaxMsgsPerSubject: 1}),
		group: func(s string) string { return s },
		limit: 1,
		setup: []string{"kv.a", "kv.b"},
		cut:   []string{"kv.a", "kv.a", "kv.b"},
	},
	{
		name:  "per-subject=2",
		cfg:   withLimits(filestore.Config{BlockSize: 1 << 20}, store.Config{MaxMsgsPerSubject: 2}),
		group: func(s string) string { return s },
		limit: 2,
		setup: []string{"kv.a", "kv.a"},
		cut:   []string{"kv.a", "kv.a", "kv.a"},
	},
	{
		name:  "max-msgs=3",
		cfg:   withLimits(filestore.Config{BlockSize: 1 << 20}, store.Config{MaxMsgs: 3}),
		group: func(string) string { return "" },
		limit: 3,
		setup: []string{"m.1", "m.2", "m.3"},
		cut:   []string{"m.4", "m.5", "m.6"},
	},
	{
		// Messages of one size, so MaxBytes holds exactly three.
		name:  "max-bytes=3msgs",
		cfg:   withLimits(filestore.Config{BlockSize: 1 << 20}, store.Config{MaxBytes: 3 * int64(store.Size("m.1", nil, []byte("m.1#0")))}),
		group: func(string) string { return "" },
		limit: 3,
		setup: []string{"m.1", "m.2", "m.3"},
		cut:   []string{"m.4", "m.5", "m.6"},
	},
	// Encrypted: sealed records are longer on disk but count the same.
	{
		name:  "per-subject=1/chachapoly",
		cfg:   withLimits(filestore.Config{BlockSize: 1 << 20, Encryption: testEncryption(filestore.CipherChaCha)}, store.Config{MaxMsgsPerSubject: 1}),
		group: func(s string) string { return s },
		limit: 1,
		setup: []string{"kv.a", "kv.b"},
		cut:   []string{"kv.a", "kv.a", "kv.b"},
	},
	{
		name:  "max-bytes=3msgs/aes",
		cfg:   withLimits(filestore.Config{BlockSize: 1 << 20, Encryption: testEncryption(filestore.CipherAES)}, store.Config{MaxBytes: 3 * int64(store.Size("m.1", nil, []byte("m.1#0")))}),
		group: func(string) string { return "" },
		limit: 3,
		setup: []string{"m.1", "m.2", "m.3"},
		cut:   []string{"m.4", "m.5", "m.6"},
	},
}

func withLimits(cfg filestore.Config, limits store.Config) filestore.Config {
	cfg.Config = limits
	return cfg
}

// TestCrashReorderedLimitEviction cuts the power at every mutating file
// operation of stores that evict older messages by a limit, and for each
// cut keeps every subset of the writes not yet synced (a seeded sample of
// 512 when there are more than 10), as a disk that writes pages back out
// of order may: the guarantee above must hold after every one.
func TestCrashReorderedLimitEviction(t *testing.T) {
	for _, sc := range limitScenarios {
		t.Run(sc.name, func(t *testing.T) {
			cuts := 0
			for k := 0; ; k++ {
				_, _, n, fired := sc.run(t, k, func(int) bool { return false })
				masks := make([]uint64, 0, 512)
				if n <= 10 {
					for m := range uint64(1) << n {
						masks = append(masks, m)
					}
				} else {
					rng := rand.New(rand.NewPCG(uint64(k), 1))
					for range 512 {
						masks = append(masks, rng.Uint64())
					}
				}
				for _, mask := range masks {
					msgs, r, _, _ := sc.run(t, k, func(i int) bool { return i < 64 && mask&(1<<i) != 0 })
					if err := sc.check(t, msgs, r); err != nil {
						t.Fatalf("cut at operation %d, keeping unsynced changes %b of %d: %v", k, mask, n, err)
					}
					r.Close()
					cuts++
				}
				if !fired {
					t.Logf("%d crash points, %d power cuts", k, cuts)
					return
				}
			}
		})
	}
}

// TestCrashReorderedConcurrentReplace cuts the power while four writers
// replace their own key and a shared one in a one-per-subject stream, so
// that group commit puts several records and evictions in one fsync
// batch, and keeps a seeded random subset of the unsynced writes: every
// key holds its last acknowledged value or a later one.
func TestCrashReorderedConcurrentReplace(t *testing.T) {
	const writers, each, trials = 4, 6, 12
	sc := limitScenario{
		cfg:   withLimits(filestore.Config{BlockSize: 1 << 20}, store.Config{MaxMsgsPerSubject: 1}),
		group: func(s string) string { return s },
		limit: 1,
	}
	cuts := 0
	for k := 0; ; k++ {
		fired := false
		for trial := range trials {
			mem := vfs.NewStrictMem()
			var armed, hit atomic.Bool
			var ops atomic.Int64
			fsys := vfs.Inject(mem, func(op vfs.Op, _ string) error {
				if armed.Load() && op.Mutates() && ops.Add(1) > int64(k) {
					hit.Store(true)
					return errPowerCut
				}
				return nil
			})
			s, err := filestore.Open(fsys, "s", sc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var msgs []limitMsg
			store := func(subj, data string) bool {
				seq, _, err := s.Store(subj, nil, []byte(data), 0)
				mu.Lock()
				msgs = append(msgs, limitMsg{subj, data, seq, err == nil})
				mu.Unlock()
				return err == nil
			}
			for w := range writers {
				store(fmt.Sprintf("kv.%d", w), "first")
			}
			store("kv.s", "first")
			armed.Store(true)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						subj := fmt.Sprintf("kv.%d", w)
						if i%2 == 1 {
							subj = "kv.s"
						}
						if !store(subj, fmt.Sprintf("%d/%d", w, i)) {
							return
						}
					}
				})
			}
			wg.Wait()
			s.Close()
			n := mem.UnsyncedChanges()
			rng := rand.New(rand.NewPCG(uint64(k), uint64(trial)))
			mem.PowerCut(func(int) bool { return rng.IntN(2) == 0 })
			r, err := filestore.Open(mem, "s", sc.cfg)
			if err != nil {
				t.Fatalf("Open after power cut: %v\n%s", err, mem)
			}
			if err := sc.check(t, msgs, r); err != nil {
				t.Fatalf("cut at operation %d, trial %d (%d unsynced changes): %v", k, trial, n, err)
			}
			r.Close()
			cuts++
			fired = fired || hit.Load()
		}
		if !fired {
			t.Logf("%d crash points, %d power cuts", k, cuts)
			return
		}
	}
}

// TestEvictionOfFailedStoreNotWritten fails the fsync of a Store that
// replaces a key's value, lets later writes succeed, and reopens: the
// failed Store evicted nothing durably, so the key keeps its old value.
// (The running stream stops showing the old value at once; it is back
// at the next Open.)
func TestEvictionOfFailedStoreNotWritten(t *testing.T) {
	cfg := withLimits(filestore.Config{}, store.Config{MaxMsgsPerSubject: 1})
	mem := vfs.NewStrictMem()
	var failSync atomic.Bool
	fsys := vfs.Inject(mem, func(op vfs.Op, _ string) error {
		if op == vfs.OpSync && failSync.CompareAndSwap(true, false) {
			return errPowerCut
		}
		return nil
	})
	s := mustOpen(t, fsys, "s", cfg)
	if _, _, err := s.Store("kv.a", nil, []byte("v1"), 0); err != nil {
		t.Fatal(err)
	}
	failSync.Store(true)
	if _, _, err := s.Store("kv.a", nil, []byte("v2"), 0); err == nil {
		t.Fatal("Store with a failing fsync succeeded")
	}
	if _, _, err := s.Store("kv.b", nil, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	s.Close()
	mem.ResetToSyncedState()
	r := mustOpen(t, mem, "s", cfg)
	sm, err := r.LoadLast("kv.a", nil)
	if err != nil {
		t.Fatalf("kv.a lost: %v", err)
	}
	if string(sm.Data) != "v1" {
		t.Fatalf("kv.a = %q, want v1", sm.Data)
	}
}

// TestCloseWritesReleasedEvictions replaces a key and closes the stream:
// the eviction's tombstone, released by the Store's fsync, is written and
// synced by Close, so the next Open has nothing to evict again.
func TestCloseWritesReleasedEvictions(t *testing.T) {
	cfg := withLimits(filestore.Config{}, store.Config{MaxMsgsPerSubject: 1})
	mem := vfs.NewStrictMem()
	s := mustOpen(t, mem, "s", cfg)
	for _, v := range []string{"v1", "v2"} {
		if _, _, err := s.Store("kv.a", nil, []byte(v), 0); err != nil {
			t.Fatal(err)
		}
	}
	blk := "s/" + names(t, mem, "s", ".blk")[0]
	before := len(readAll(t, mem, blk))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := len(readAll(t, mem, blk)) - before; got != 44 {
		t.Fatalf("Close wrote %d bytes, want one 44-byte tombstone", got)
	}
	if n := mem.UnsyncedChanges(); n != 0 {
		t.Fatalf("%d unsynced changes after Close", n)
	}
	mem.ResetToSyncedState()
	r := mustOpen(t, mem, "s", cfg)
	sm, err := r.LoadLast("kv.a", nil)
	if err != nil || string(sm.Data) != "v2" {
		t.Fatalf("kv.a = %v, %v; want v2", sm, err)
	}
	if st := r.State(); st.Msgs != 1 {
		t.Fatalf("state %+v", st)
	}
}
