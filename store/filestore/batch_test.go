package filestore_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// batchOf returns batch b of n messages; each message's data names its
// batch and position, so a recovered stream can be checked per batch.
func batchOf(b, n int) []store.BatchMsg { return bigBatchOf(b, n, 80) }

// bigBatchOf is batchOf with pad bytes of padding per message.
func bigBatchOf(b, n, pad int) []store.BatchMsg {
	msgs := make([]store.BatchMsg, n)
	for i := range msgs {
		msgs[i] = store.BatchMsg{Subject: fmt.Sprintf("b.%d", b), Data: fmt.Appendf(nil, "batch %d msg %d of %d, padded %0*d", b, i, n, pad, 0)}
	}
	return msgs
}

// batchCounts returns how many messages of each batch s holds.
func batchCounts(t *testing.T, s store.Stream) map[string]uint64 {
	t.Helper()
	return s.SubjectsState("b.*")
}

// checkWholeBatches fails unless every batch s holds is complete (sizes
// gives each batch's length) and every batch in acked is there.
func checkWholeBatches(t *testing.T, s store.Stream, sizes map[string]int, acked []string) {
	t.Helper()
	got := batchCounts(t, s)
	for subj, n := range got {
		if int(n) != sizes[subj] {
			t.Fatalf("batch %s: %d of %d messages recovered", subj, n, sizes[subj])
		}
	}
	for _, subj := range acked {
		if got[subj] == 0 {
			t.Fatalf("acknowledged batch %s lost", subj)
		}
	}
}

// TestStoreBatchCrashEveryWrite cuts the power at every mutating file
// operation of a run that stores single messages and batches (SyncInterval
// 0, blocks smaller than a batch): every batch is recovered whole or not
// at all, and every batch StoreBatch returned for is there.
func TestStoreBatchCrashEveryWrite(t *testing.T) {
	for _, c := range crashConfigs {
		t.Run(c.name, func(t *testing.T) {
			for k := 0; ; k++ {
				run := newCrashRun(k)
				sizes := map[string]int{}
				var acked []string
				if s, err := filestore.Open(run.fsys, "s", c.cfg); err == nil {
					for b := range 6 {
						if _, _, err := s.Store("single", nil, []byte("x"), 0); err != nil {
							break
						}
						n := 2 + b%4
						subj := fmt.Sprintf("b.%d", b)
						sizes[subj] = n
						if _, _, err := s.StoreBatch(batchOf(b, n)); err != nil {
							break
						}
						acked = append(acked, subj)
					}
					s.Close()
				}
				s := run.reopen(t, c.cfg)
				checkWholeBatches(t, s, sizes, acked)
				if t.Failed() {
					t.Fatalf("k=%d\n%s", k, run.mem)
				}
				if !run.trig.Fired() {
					t.Logf("%d crash points", k)
					return
				}
				s.Close()
			}
		})
	}
}

// TestStoreBatchPowerCutReorder stores batches and single messages with
// nothing synced, then loses a random subset of the writes (a disk that
// writes back in any order): each batch's records are one write, so each
// batch survives whole or not at all. The messages are large enough that
// a batch is more than the 64 KiB a stream buffers before it writes.
func TestStoreBatchPowerCutReorder(t *testing.T) {
	for seed := range uint64(40) {
		mem := vfs.NewStrictMem()
		cfg := filestore.Config{BlockSize: 1 << 20, SyncInterval: 1 << 40}
		s := mustOpen(t, mem, "s", cfg)
		sizes := map[string]int{}
		for b := range 8 {
			if _, _, err := s.Store("single", nil, []byte("x"), 0); err != nil {
				t.Fatal(err)
			}
			n := 2 + b%5
			sizes[fmt.Sprintf("b.%d", b)] = n
			if _, _, err := s.StoreBatch(bigBatchOf(b, n, 30<<10)); err != nil {
				t.Fatal(err)
			}
		}
		rng := rand.New(rand.NewPCG(seed, 1))
		mem.PowerCut(func(int) bool { return rng.IntN(2) == 0 })
		s2, err := filestore.Open(mem, "s", cfg)
		if err != nil {
			t.Fatal(err)
		}
		checkWholeBatches(t, s2, sizes, nil)
		if len(batchCounts(t, s2)) == 0 {
			t.Logf("seed %d: no batch survived", seed)
		}
		s2.Close()
		_ = s.Close()
	}
}

// TestStoreBatchTornWrite cuts the block file inside a batch's write, as
// a process killed during a large write can leave it: Open keeps a prefix
// of the batch's records and nothing after it, which is the shape
// store/jetstream's recovery recognises and removes.
func TestStoreBatchTornWrite(t *testing.T) {
	mem := vfs.NewStrictMem()
	cfg := filestore.Config{BlockSize: 1 << 20}
	s := mustOpen(t, mem, "s", cfg)
	if _, _, err := s.Store("single", nil, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	before := s.State()
	msgs := batchOf(0, 4)
	if _, _, err := s.StoreBatch(msgs); err != nil {
		t.Fatal(err)
	}
	s.Close()
	blk := "s/" + names(t, mem, "s", ".blk")[0]
	full := readAll(t, mem, blk)
	batchLen := 0
	for _, m := range msgs {
		batchLen += 44 + len(m.Subject) + len(m.Data)
	}
	for cut := len(full) - batchLen; cut < len(full); cut++ {
		writeAll(t, mem, blk, full[:cut])
		s, err := filestore.Open(mem, "s", cfg)
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		st := s.State()
		whole := (cut - (len(full) - batchLen)) / (batchLen / len(msgs))
		if st.Msgs != before.Msgs+uint64(whole) || st.LastSeq != before.LastSeq+uint64(whole) {
			t.Fatalf("cut %d: state %+v, want the single message and %d batch records", cut, st, whole)
		}
		s.Close()
	}
}

// TestStoreBatchLimits: a batch that would break a DiscardNew limit is
// refused whole, and one that fits is stored with consecutive sequences.
func TestStoreBatchLimits(t *testing.T) {
	mem := vfs.NewMem()
	s := mustOpen(t, mem, "s", filestore.Config{Config: store.Config{MaxMsgs: 5, Discard: store.DiscardNew}})
	defer s.Close()
	if _, _, err := s.StoreBatch(batchOf(0, 3)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.StoreBatch(batchOf(1, 3)); err != store.ErrMaxMsgs {
		t.Fatalf("over MaxMsgs: %v, want ErrMaxMsgs", err)
	}
	if st := s.State(); st.Msgs != 3 || st.LastSeq != 3 {
		t.Fatalf("after a refused batch: %+v", st)
	}
	first, _, err := s.StoreBatch(batchOf(2, 2))
	if err != nil || first != 4 {
		t.Fatalf("StoreBatch: first %d, %v", first, err)
	}
	if _, _, err := s.StoreBatch([]store.BatchMsg{{Subject: "ok"}, {Subject: "bad subject"}}); err == nil {
		t.Fatal("a batch with an invalid subject was stored")
	}
	if st := s.State(); st.Msgs != 5 {
		t.Fatalf("state %+v", st)
	}
}
