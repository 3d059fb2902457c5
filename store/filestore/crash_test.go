package filestore_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/memstore"
	"github.com/leafbox/leafbox/store/storetest"
	"github.com/leafbox/leafbox/store/vfs"
)

// crashConfigs are the settings the power-cut tests run under: small
// blocks, so that a few dozen messages cross several block boundaries,
// seal and compress blocks and write index files, all of which the crash
// may interrupt.
var crashConfigs = []struct {
	name string
	cfg  filestore.Config
}{
	{"none", filestore.Config{BlockSize: 400}},
	{"s2", filestore.Config{BlockSize: 400, Compression: filestore.CompressionS2}},
	// Encrypted stores: sealed records, sealed index files and the
	// stream.key written at the first Open, which the cut may interrupt.
	{"chachapoly", filestore.Config{BlockSize: 400, Encryption: testEncryption(filestore.CipherChaCha)}},
	{"aes", filestore.Config{BlockSize: 400, Encryption: testEncryption(filestore.CipherAES)}},
}

// crashRun is one run that loses power at the k-th mutating file
// operation (pebble's TestDBWALRotationCrash pattern): the Trigger fails
// that operation and every later one, as a dead machine would, then the
// file system is reset to what was synced.
type crashRun struct {
	mem  *vfs.MemFS
	trig *vfs.Trigger
	fsys vfs.FS
}

func newCrashRun(k int) *crashRun {
	mem := vfs.NewStrictMem()
	trig := vfs.NewTrigger(int64(k), errPowerCut)
	return &crashRun{mem: mem, trig: trig, fsys: vfs.Inject(mem, trig.Fail)}
}

// reopen cuts the power and opens the stream again on the surviving
// data, without injected errors.
func (c *crashRun) reopen(t *testing.T, cfg filestore.Config) *filestore.Stream {
	t.Helper()
	c.mem.ResetToSyncedState()
	s, err := filestore.Open(c.mem, "s", cfg)
	if err != nil {
		t.Fatalf("Open after power cut: %v\n%s", err, c.mem)
	}
	t.Cleanup(func() { s.Close() })
	if r := s.Recovered(); r.Lost() {
		t.Fatalf("a power cut must only leave torn tails, not corruption: %v", r)
	}
	return s
}

// TestCrashEveryWrite cuts the power at every mutating file operation of
// a run that stores 40 messages with SyncInterval 0, and requires the
// recovered stream to hold exactly the acknowledged messages, with their
// sequences and contents, in order, and to go on with the next sequence.
func TestCrashEveryWrite(t *testing.T) {
	const n = 40
	for _, c := range crashConfigs {
		t.Run(c.name, func(t *testing.T) {
			for k := 0; ; k++ {
				run := newCrashRun(k)
				var acked []storetest.AckedMsg
				if s, err := filestore.Open(run.fsys, "s", c.cfg); err == nil {
					for i := range n {
						acked, _ = storeAcked(s, i, acked)
					}
					s.Close()
				}
				s := run.reopen(t, c.cfg)
				storetest.CheckPrefix(t, acked, s)
				if got := s.State().Msgs; got != uint64(len(acked)) {
					t.Fatalf("k=%d: %d messages recovered, %d acknowledged: phantom messages", k, got, len(acked))
				}
				storetest.CheckResume(t, acked, s, "resume")
				if t.Failed() {
					t.Fatalf("k=%d\n%s", k, run.mem)
				}
				if !run.trig.Fired() {
					t.Logf("%d crash points", k)
					return
				}
			}
		})
	}
}

// TestCrashConcurrentWriters cuts the power while eight goroutines store
// concurrently (group commit): every acknowledged message survives, and
// every recovered message is one that was stored.
func TestCrashConcurrentWriters(t *testing.T) {
	for _, enc := range []filestore.Encryption{{}, testEncryption(filestore.CipherChaCha)} {
		t.Run(enc.String(), func(t *testing.T) {
			crashConcurrentWriters(t, filestore.Config{BlockSize: 600, Encryption: enc})
		})
	}
}

func crashConcurrentWriters(t *testing.T, cfg filestore.Config) {
	const writers, each = 8, 8
	for k := 0; ; k += 3 {
		run := newCrashRun(k)
		var mu sync.Mutex
		var acked []storetest.AckedMsg
		attempted := make(map[string]bool)
		if s, err := filestore.Open(run.fsys, "s", cfg); err == nil {
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						subj, data := fmt.Sprintf("w.%d", w), fmt.Appendf(nil, "%d/%d", w, i)
						mu.Lock()
						attempted[subj+" "+string(data)] = true
						mu.Unlock()
						seq, _, err := s.Store(subj, nil, data, 0)
						if err == nil {
							mu.Lock()
							acked = append(acked, storetest.AckedMsg{Seq: seq, Subject: subj, Data: data})
							mu.Unlock()
						}
					}
				})
			}
			wg.Wait()
			s.Close()
		}
		s := run.reopen(t, cfg)
		sortAcked(acked)
		storetest.CheckPrefix(t, acked, s)
		for _, line := range takeDump(t, s).msgs {
			var seq uint64
			var subj, data string
			fmt.Sscanf(line, "%d %s %q %q", &seq, &subj, new(string), &data)
			if !attempted[subj+" "+data] {
				t.Fatalf("k=%d: recovered message %q was never stored", k, line)
			}
		}
		storetest.CheckResume(t, acked, s, "resume")
		if t.Failed() {
			t.Fatalf("power cut at write %d", k)
		}
		if !run.trig.Fired() {
			t.Logf("%d crash points", k/3)
			return
		}
	}
}

func sortAcked(a []storetest.AckedMsg) {
	for i := 1; i < len(a); i++ {
		for j := i; j > 0 && a[j].Seq < a[j-1].Seq; j-- {
			a[j], a[j-1] = a[j-1], a[j]
		}
	}
}

// TestCrashWorkloadMatchesModel runs a random workload of stores (with
// per-subject and stream limits), removes, erases and purges, cuts the
// power at every mutating operation, and requires the recovered stream to
// equal a memstore that applied exactly the operations that succeeded:
// with SyncInterval 0 every successful operation is durable, and a failed
// one leaves no trace.
func TestCrashWorkloadMatchesModel(t *testing.T) {
	limits := store.Config{MaxMsgsPerSubject: 4, MaxMsgs: 30}
	for _, c := range crashConfigs {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			cfg.Config = limits
			for k := 0; ; k++ {
				run := newCrashRun(k)
				model, err := memstore.New(limits)
				if err != nil {
					t.Fatal(err)
				}
				if s, err := filestore.Open(run.fsys, "s", cfg); err == nil {
					runWorkload(rand.New(rand.NewPCG(uint64(k), 7)), s, model, 80)
					s.Close()
				}
				s := run.reopen(t, cfg)
				if d := diffContent(takeDump(t, s), takeDump(t, model)); d != "" {
					t.Fatalf("power cut at write %d: %s", k, d)
				}
				if !run.trig.Fired() {
					t.Logf("%d crash points", k)
					return
				}
			}
		})
	}
}

// runWorkload applies n random operations to s and, when they succeed, to
// model. It stops at the first failure: after a power cut nothing works.
func runWorkload(rng *rand.Rand, s store.Stream, model store.Stream, n int) {
	for range n {
		switch p := rng.IntN(100); {
		case p < 70:
			subj := fmt.Sprintf("kv.%d", rng.IntN(8))
			data := fmt.Appendf(nil, "%d", rng.Uint32())
			if _, _, err := s.Store(subj, nil, data, 0); err != nil {
				return
			}
			model.Store(subj, nil, data, 0)
		case p < 85:
			seq := 1 + rng.Uint64N(s.State().LastSeq+1)
			erase := rng.IntN(2) == 0
			ok, err := s.Remove(seq, erase)
			if ok {
				// Removed durably, even if erasing then failed.
				model.Remove(seq, erase)
			}
			if err != nil {
				return
			}
		case p < 95:
			opts := store.PurgeOptions{Subject: fmt.Sprintf("kv.%d", rng.IntN(8)), Keep: uint64(rng.IntN(3))}
			if _, err := s.Purge(opts); err != nil {
				return
			}
			model.Purge(opts)
		default:
			opts := store.PurgeOptions{Sequence: uint64(max(0, int64(s.State().LastSeq)+3-rng.Int64N(5)))}
			if rng.IntN(3) == 0 {
				opts = store.PurgeOptions{}
			}
			if _, err := s.Purge(opts); err != nil {
				return
			}
			model.Purge(opts)
		}
	}
}

// TestTornTail cuts the last block at every byte offset inside its last
// record, as a power cut during that write could, and requires recovery to
// drop exactly that record, report it, and keep everything before.
func TestTornTail(t *testing.T) {
	for _, withIndex := range []bool{false, true} {
		t.Run(fmt.Sprintf("index=%v", withIndex), func(t *testing.T) {
			mem := vfs.NewStrictMem()
			cfg := filestore.Config{BlockSize: 1 << 20}
			s := mustOpen(t, mem, "s", cfg)
			var acked []storetest.AckedMsg
			for i := range 10 {
				acked, _ = storeAcked(s, i, acked)
			}
			if withIndex {
				// The index file then covers only part of the block.
				if err := s.Checkpoint(); err != nil {
					t.Fatal(err)
				}
			}
			acked, _ = storeAcked(s, 10, acked)
			s.Close()
			blk := "s/" + names(t, mem, "s", ".blk")[0]
			full := readAll(t, mem, blk)
			last := recordLen(acked[10])
			for cut := len(full) - last; cut < len(full); cut++ {
				writeAll(t, mem, blk, full[:cut])
				s, err := filestore.Open(mem, "s", cfg)
				if err != nil {
					t.Fatalf("cut %d: %v", cut, err)
				}
				r := s.Recovered()
				wantCut := int64(cut - (len(full) - last))
				if r.TruncatedBytes != wantCut || (wantCut > 0) != (r.DroppedRecords == 1) || r.Lost() {
					t.Fatalf("cut %d: report %v, want %d bytes truncated", cut, r, wantCut)
				}
				storetest.CheckPrefix(t, acked[:10], s)
				if got := s.State(); got.Msgs != 10 || got.LastSeq != 10 {
					t.Fatalf("cut %d: state %+v", cut, got)
				}
				storetest.CheckResume(t, acked[:10], s, "resume")
				s.Close()
				if t.Failed() {
					return
				}
			}
		})
	}
}

// recordLen is the on-disk length of a message record (see doc.go).
func recordLen(m storetest.AckedMsg) int {
	return 44 + len(m.Subject) + len(m.Header) + len(m.Data)
}

// TestBitFlips flips each bit position class in turn at every byte of a
// block's middle record, with the index files removed so the block is
// scanned: Open never fails or panics, the damage is counted, and every
// other message is intact.
func TestBitFlips(t *testing.T) {
	for _, c := range crashConfigs {
		t.Run(c.name, func(t *testing.T) {
			mem := vfs.NewStrictMem()
			cfg := c.cfg
			cfg.BlockSize = 1 << 20
			s := mustOpen(t, mem, "s", cfg)
			var acked []storetest.AckedMsg
			for i := range 9 {
				acked, _ = storeAcked(s, i, acked)
			}
			s.Close()
			blk := "s/" + names(t, mem, "s", ".blk")[0]
			full := readAll(t, mem, blk)
			// Record 4's bytes start after the header and records 0..3.
			start := 48
			for _, a := range acked[:4] {
				start += recordLen(a) + sealOverhead(cfg)
			}
			end := start + recordLen(acked[4]) + sealOverhead(cfg)
			if c.cfg.Compression != filestore.CompressionNone {
				// Not compressed: the block was never sealed.
				_ = end
			}
			for off := 0; off < len(full); off++ {
				if off >= 48 && (off < start || off >= end) {
					continue
				}
				damaged := append([]byte(nil), full...)
				damaged[off] ^= 1 << (off % 8)
				writeAll(t, mem, blk, damaged)
				_ = mem.Remove("s/" + names(t, mem, "s", ".blk")[0][:10] + ".idx")
				s, err := filestore.Open(mem, "s", cfg)
				if err != nil {
					t.Fatalf("flip at %d: %v", off, err)
				}
				r := s.Recovered()
				if !r.Lost() {
					t.Fatalf("flip at %d: corruption not reported: %v", off, r)
				}
				if off >= 48 {
					// Only message 5 (seq) is gone.
					storetest.CheckPrefix(t, append(append([]storetest.AckedMsg(nil), acked[:4]...), acked[5:]...), s)
					if _, err := s.Load(5, nil); !errors.Is(err, store.ErrDeleted) {
						t.Fatalf("flip at %d: Load(5) = %v, want ErrDeleted", off, err)
					}
				} else {
					// A bad header: the records are still salvaged.
					storetest.CheckPrefix(t, acked, s)
				}
				s.Close()
				writeAll(t, mem, blk, full)
				if t.Failed() {
					return
				}
			}
		})
	}
}
