package filestore_test

import (
	"maps"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// consumerSim evolves a consumer's state the way a pull consumer does:
// deliveries, acks in and out of order that move the ack floor, and
// redeliveries.
type consumerSim struct {
	rng *rand.Rand
	st  store.ConsumerState
}

func newConsumerSim(seed uint64) *consumerSim {
	return &consumerSim{
		rng: rand.New(rand.NewPCG(seed, 1)),
		st:  store.ConsumerState{Pending: map[uint64]store.Pending{}, Redelivered: map[uint64]uint64{}},
	}
}

// step changes the state and returns a copy of it.
func (c *consumerSim) step() *store.ConsumerState {
	st := &c.st
	switch p := c.rng.IntN(10); {
	case p < 4 || len(st.Pending) == 0:
		st.Delivered.Consumer++
		st.Delivered.Stream += 1 + c.rng.Uint64N(2)
		st.Pending[st.Delivered.Stream] = store.Pending{Sequence: st.Delivered.Consumer, Timestamp: int64(st.Delivered.Consumer) * 1e6}
	case p < 8:
		// Ack one, usually the oldest.
		seq := c.oldest()
		if c.rng.IntN(3) == 0 {
			for s := range st.Pending {
				seq = s
				break
			}
		}
		delete(st.Pending, seq)
		if len(st.Pending) == 0 {
			st.AckFloor = st.Delivered
		} else if o := c.oldest(); o-1 > st.AckFloor.Stream {
			st.AckFloor = store.SequencePair{Consumer: st.Pending[o].Sequence - 1, Stream: o - 1}
		}
		for s := range st.Redelivered {
			if s <= st.AckFloor.Stream || st.Pending[s] == (store.Pending{}) {
				delete(st.Redelivered, s)
			}
		}
	default:
		seq := c.oldest()
		st.Delivered.Consumer++
		st.Pending[seq] = store.Pending{Sequence: st.Delivered.Consumer, Timestamp: int64(st.Delivered.Consumer) * 1e6}
		st.Redelivered[seq]++
	}
	return c.copy()
}

func (c *consumerSim) oldest() uint64 {
	var o uint64
	for s := range c.st.Pending {
		if o == 0 || s < o {
			o = s
		}
	}
	return o
}

func (c *consumerSim) copy() *store.ConsumerState {
	return &store.ConsumerState{
		Delivered: c.st.Delivered, AckFloor: c.st.AckFloor,
		Pending: maps.Clone(c.st.Pending), Redelivered: maps.Clone(c.st.Redelivered),
	}
}

func sameConsumerState(a, b *store.ConsumerState) bool {
	return a.Delivered == b.Delivered && a.AckFloor == b.AckFloor &&
		maps.Equal(a.Pending, b.Pending) && maps.Equal(a.Redelivered, b.Redelivered)
}

func mustConsumerState(t *testing.T, c store.ConsumerStore) *store.ConsumerState {
	t.Helper()
	st, err := c.State()
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestConsumerKillReopen "kills" the process every few updates (the store
// is abandoned without Close, the file system keeps what was written) and
// reopens: the state is always the last one recorded, with and without
// fsync per update, across many compactions.
func TestConsumerKillReopen(t *testing.T) {
	for _, cfg := range []filestore.ConsumerConfig{{CompactSize: 2048}, {SyncInterval: time.Hour, CompactSize: 2048}} {
		t.Run(cfg.SyncInterval.String(), func(t *testing.T) {
			mem := vfs.NewStrictMem()
			var rewrites atomic.Int64
			fsys := vfs.Inject(mem, func(op vfs.Op, path string) error {
				if op == vfs.OpRename {
					rewrites.Add(1)
				}
				return nil
			})
			sim := newConsumerSim(1)
			c, err := filestore.OpenConsumerStoreConfig(fsys, "c", cfg)
			if err != nil {
				t.Fatal(err)
			}
			var last *store.ConsumerState
			for i := range 2000 {
				last = sim.step()
				if err := c.Update(last); err != nil {
					t.Fatal(err)
				}
				if i%97 == 0 {
					// Kill: no Close. The old handle is simply dropped.
					if c, err = filestore.OpenConsumerStoreConfig(fsys, "c", cfg); err != nil {
						t.Fatal(err)
					}
					if got := mustConsumerState(t, c); !sameConsumerState(got, last) {
						t.Fatalf("after kill at update %d: got %+v, want %+v", i, got, last)
					}
					if r := c.Recovered(); r.TruncatedBytes != 0 {
						t.Fatalf("clean kill reported %v", r)
					}
				}
			}
			if rewrites.Load() < 5 {
				t.Fatalf("only %d compactions", rewrites.Load())
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestConsumerPowerCut cuts the power at every mutating file operation of
// a run of updates (fsync per update, compactions included): the state
// after recovery is the last one Update acknowledged.
func TestConsumerPowerCut(t *testing.T) {
	for _, enc := range []filestore.Encryption{{}, testEncryption(filestore.CipherChaCha), testEncryption(filestore.CipherAES)} {
		t.Run(enc.String(), func(t *testing.T) {
			consumerPowerCut(t, filestore.ConsumerConfig{CompactSize: 1024, Encryption: enc})
		})
	}
}

func consumerPowerCut(t *testing.T, cfg filestore.ConsumerConfig) {
	for k := 0; ; k++ {
		mem := vfs.NewStrictMem()
		trig := vfs.NewTrigger(int64(k), errPowerCut)
		sim := newConsumerSim(2)
		acked := &store.ConsumerState{}
		if c, err := filestore.OpenConsumerStoreConfig(vfs.Inject(mem, trig.Fail), "c", cfg); err == nil {
			for range 150 {
				st := sim.step()
				if c.Update(st) != nil {
					break
				}
				acked = st
			}
			c.Close()
		}
		mem.ResetToSyncedState()
		c, err := filestore.OpenConsumerStoreConfig(mem, "c", cfg)
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		if got := mustConsumerState(t, c); !sameConsumerState(got, acked) {
			t.Fatalf("power cut at write %d: got %+v, want %+v", k, got, acked)
		}
		c.Close()
		if !trig.Fired() {
			t.Logf("%d crash points", k)
			return
		}
	}
}

// TestConsumerTornTail cuts the log inside its last frame at every offset:
// recovery drops that update only, reports it, and the store goes on.
func TestConsumerTornTail(t *testing.T) {
	mem := vfs.NewStrictMem()
	c, err := filestore.OpenConsumerStore(mem, "c")
	if err != nil {
		t.Fatal(err)
	}
	sim := newConsumerSim(3)
	var prev, last *store.ConsumerState
	var before int64
	for range 30 {
		prev = last
		if fi, err := mem.Stat("c/consumer.log"); err == nil {
			before = fi.Size()
		}
		last = sim.step()
		if err := c.Update(last); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	full := readAll(t, mem, "c/consumer.log")
	if int64(len(full)) <= before {
		t.Fatalf("last update wrote nothing")
	}
	for cut := before; cut <= int64(len(full)); cut++ {
		writeAll(t, mem, "c/consumer.log", full[:cut])
		c, err := filestore.OpenConsumerStore(mem, "c")
		if err != nil {
			t.Fatalf("cut %d: %v", cut, err)
		}
		want := prev
		if cut == int64(len(full)) {
			want = last
		}
		if got := mustConsumerState(t, c); !sameConsumerState(got, want) {
			t.Fatalf("cut %d: got %+v, want %+v", cut, got, want)
		}
		wantCut := cut - before
		if cut == int64(len(full)) {
			wantCut = 0
		}
		if r := c.Recovered(); r.TruncatedBytes != wantCut {
			t.Fatalf("cut %d of %d (before %d): report %+v", cut, len(full), before, r)
		}
		if err := c.Update(last); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
}

// TestConsumerAppendsSmallDeltas checks the SD-card budget: with 500
// messages pending, each ack appends a few bytes and rewrites nothing.
func TestConsumerAppendsSmallDeltas(t *testing.T) {
	mem := vfs.NewStrictMem()
	var creates, written atomic.Int64
	fsys := vfs.Inject(mem, func(op vfs.Op, path string) error {
		if op == vfs.OpCreate || op == vfs.OpRename {
			creates.Add(1)
		}
		return nil
	})
	c, err := filestore.OpenConsumerStore(fsys, "c")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st := &store.ConsumerState{Pending: map[uint64]store.Pending{}}
	for seq := uint64(1); seq <= 500; seq++ {
		st.Pending[seq] = store.Pending{Sequence: seq, Timestamp: int64(seq)}
	}
	st.Delivered = store.SequencePair{Consumer: 500, Stream: 500}
	if err := c.Update(st); err != nil {
		t.Fatal(err)
	}
	fi, _ := mem.Stat("c/consumer.log")
	start := fi.Size()
	creates.Store(0)
	for seq := uint64(1); seq <= 200; seq++ {
		delete(st.Pending, seq)
		st.AckFloor = store.SequencePair{Consumer: seq, Stream: seq}
		if err := c.Update(st); err != nil {
			t.Fatal(err)
		}
	}
	fi, _ = mem.Stat("c/consumer.log")
	written.Store(fi.Size() - start)
	if creates.Load() != 0 {
		t.Fatalf("%d files created or renamed during 200 acks", creates.Load())
	}
	if per := written.Load() / 200; per > 24 {
		t.Fatalf("%d bytes appended per ack", per)
	}
	t.Logf("%d bytes per ack", written.Load()/200)
}

// FuzzConsumerLog opens a consumer store whose log holds the fuzzer's
// bytes: never a panic, and the store works afterwards.
func FuzzConsumerLog(f *testing.F) {
	mem := vfs.NewMem()
	c, _ := filestore.OpenConsumerStore(mem, "c")
	sim := newConsumerSim(4)
	for range 5 {
		c.Update(sim.step())
	}
	c.Close()
	log := readAll(f, mem, "c/consumer.log")
	f.Add(log)
	f.Add(log[:len(log)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		mem := vfs.NewMem()
		mem.MkdirAll("c", 0o755)
		writeAll(t, mem, "c/consumer.log", b)
		c, err := filestore.OpenConsumerStore(mem, "c")
		if err != nil {
			t.Fatal(err)
		}
		st := mustConsumerState(t, c)
		st.Delivered.Consumer++
		if err := c.Update(st); err != nil {
			t.Fatal(err)
		}
		c.Close()
		c, err = filestore.OpenConsumerStore(mem, "c")
		if err != nil {
			t.Fatal(err)
		}
		if got := mustConsumerState(t, c); !sameConsumerState(got, st) {
			t.Fatalf("reopen: got %+v, want %+v", got, st)
		}
		c.Close()
	})
}
