package jetstream

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/jsapi"
	"github.com/leafbox/leafbox/store/vfs"
)

// commitBatch publishes batch id of n messages on subj and returns the
// commit's reply, or an error.
func commitBatch(nc *nats.Conn, subj, id string, n int) (*nats.Msg, error) {
	for i := 1; i < n; i++ {
		if _, err := nc.RequestMsg(batchMsg(subj, id, i, "", fmt.Sprint(id, "/", i)), testTimeout); err != nil {
			return nil, err
		}
	}
	return nc.RequestMsg(batchMsg(subj, id, n, "1", fmt.Sprint(id, "/", n)), testTimeout)
}

const testTimeout = 10e9 // 10s, a bound for a loaded machine

// TestAtomicBatchPowerCut commits batches from three publishers (and
// single messages from a fourth) into a file stream in sync-always mode,
// then cuts the power with a random subset of the unsynced writes
// reaching the disk (vfs.MemFS.PowerCut: any order), and restarts: every
// batch whose commit was acknowledged is there, and every batch present
// is whole.
func TestAtomicBatchPowerCut(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			mem := vfs.NewStrictMem()
			var cut atomic.Bool
			crashable := vfs.Inject(mem, func(op vfs.Op, _ string) error {
				if cut.Load() && op.Mutates() {
					return errPowerCut
				}
				return nil
			})
			env := newTestEnvWith(t, &testEnv{t: t, cfg: Config{StoreDir: "/js"}, fs: crashable})
			ctx := testCtx(t)
			_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: njs.FileStorage, AllowAtomicPublish: true})
			require.NoError(t, err)

			var (
				mu    sync.Mutex
				acked []string
				wg    sync.WaitGroup
			)
			stop := make(chan struct{})
			enough := make(chan struct{})
			var once sync.Once
			for p := range 3 {
				nc, _ := env.newClient()
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						id := fmt.Sprintf("b%d.%d-%d", p, i, 2+(i+p)%5)
						var n int
						fmt.Sscanf(id, "b%d.%d-%d", new(int), new(int), &n)
						r, err := commitBatch(nc, fmt.Sprint("s.", p), id, n)
						if err != nil {
							return
						}
						mu.Lock()
						var ack jsapi.PubAckResponse
						if !cut.Load() && json.Unmarshal(r.Data, &ack) == nil && ack.Error == nil && ack.PubAck != nil && ack.Batch == id {
							acked = append(acked, id)
							if len(acked) >= 40 {
								once.Do(func() { close(enough) })
							}
						}
						mu.Unlock()
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := env.js.PublishAsync("s.single", []byte(strconv.Itoa(i))); err != nil {
						return
					}
				}
			}()
			select {
			case <-enough:
			case <-ctx.Done():
				t.Fatal("not enough batches acknowledged")
			}
			mu.Lock()
			cut.Store(true)
			survivors := append([]string(nil), acked...)
			mu.Unlock()
			rng := rand.New(rand.NewPCG(seed, 7))
			mem.PowerCut(func(int) bool { return rng.IntN(2) == 0 })
			close(stop)
			env.stop()
			wg.Wait()
			_ = env.eng.Close()
			env.fs = mem
			env.startEngine()

			have, want := batchSizesOf(t, env.js, "S")
			for id, n := range have {
				if n != want[id] {
					t.Errorf("batch %s: %d of %d messages after the power cut", id, n, want[id])
				}
			}
			for _, id := range survivors {
				if have[id] == 0 {
					t.Errorf("acknowledged batch %s lost", id)
				}
			}
			t.Logf("%d batches acknowledged, %d present", len(survivors), len(have))
		})
	}
}

// batchSizesOf is batchSizes for ids "b<p>.<i>-<n>".
func batchSizesOf(t *testing.T, js njs.JetStream, name string) (have, want map[string]int) {
	t.Helper()
	ctx := testCtx(t)
	s, err := js.Stream(ctx, name)
	require.NoError(t, err)
	st := s.CachedInfo().State
	have, want = map[string]int{}, map[string]int{}
	for seq := st.FirstSeq; st.Msgs > 0 && seq <= st.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue
		}
		id := m.Header.Get(jsapi.HeaderBatchID)
		if id == "" {
			continue
		}
		have[id]++
		var n int
		fmt.Sscanf(id, "b%d.%d-%d", new(int), new(int), &n)
		want[id] = n
	}
	return have, want
}

// TestAtomicBatchTornWrite leaves the stream's block file cut at every
// byte inside a committed batch's write, as a process killed (kill -9)
// during that write can leave it, and restarts: the batch is gone whole,
// the message before it stays, and the stream goes on.
func TestAtomicBatchTornWrite(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: njs.FileStorage, AllowAtomicPublish: true})
	require.NoError(t, err)
	_, err = env.js.Publish(ctx, "s.single", []byte("before"))
	require.NoError(t, err)
	require.NoError(t, env.eng.Close())
	dir := filepath.Join(env.cfg.StoreDir, "S", "msgs")
	blocks, _ := filepath.Glob(filepath.Join(dir, "*.blk"))
	require.Equal(t, len(blocks), 1)
	before, err := os.ReadFile(blocks[0])
	require.NoError(t, err)
	env.startEngine()
	r, err := commitBatch(env.nc, "s.b", "b0.0-4", 4)
	require.NoError(t, err)
	require.Equal(t, string(r.Data), `{"stream":"S","seq":5,"batch":"b0.0-4","count":4}`)
	require.NoError(t, env.eng.Close())
	full, err := os.ReadFile(blocks[0])
	require.NoError(t, err)
	if len(full) <= len(before) {
		t.Fatalf("block %d bytes before the batch, %d after", len(before), len(full))
	}
	step := max(1, (len(full)-len(before))/60) // every byte is slow under -race
	for cut := len(before); cut < len(full); cut += step {
		idx, _ := filepath.Glob(filepath.Join(dir, "*.idx"))
		for _, f := range idx {
			require.NoError(t, os.Remove(f))
		}
		require.NoError(t, os.WriteFile(blocks[0], full[:cut], 0o600))
		env.startEngine()
		s, err := env.js.Stream(ctx, "S")
		require.NoError(t, err)
		if st := s.CachedInfo().State; st.Msgs != 1 {
			t.Fatalf("cut at %d of %d..%d: %d messages, want only the one before the batch", cut, len(before), len(full), st.Msgs)
		}
		ack, err := env.js.Publish(ctx, "s.after", []byte("after"))
		require.NoError(t, err)
		if ack.Sequence < 2 {
			t.Fatalf("cut at %d: next sequence %d", cut, ack.Sequence)
		}
		require.NoError(t, env.eng.Close())
	}
	// Uncut, the batch is whole.
	require.NoError(t, os.WriteFile(blocks[0], full, 0o600))
	env.startEngine()
	have, _ := batchSizesOf(t, env.js, "S")
	require.Equal(t, have["b0.0-4"], 4)
	// Messages removed from a whole batch (a delete, a work queue's ack)
	// are not a torn batch: a restart keeps the rest, also when the
	// commit message itself is gone.
	s, err := env.js.Stream(ctx, "S")
	require.NoError(t, err)
	for _, seq := range []uint64{3, 5} {
		require.NoError(t, s.DeleteMsg(ctx, seq))
		env.restart()
		have, _ = batchSizesOf(t, env.js, "S")
		if seq == 3 {
			require.Equal(t, have["b0.0-4"], 3)
		} else {
			require.Equal(t, have["b0.0-4"], 2)
		}
	}
}

// TestAtomicBatchNoPartialReads: while batches of five are committed,
// a reader of the stream's store (as consumers and direct gets read it,
// without the stream lock) only ever sees whole batches.
func TestAtomicBatchNoPartialReads(t *testing.T) {
	t.Parallel()
	forEachStorage(t, func(t *testing.T, st njs.StorageType) {
		env := newTestEnv(t, Config{})
		ctx := testCtx(t)
		_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: st, AllowAtomicPublish: true})
		require.NoError(t, err)
		s := env.eng.lookup("S")
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range 40 {
				if _, err := commitBatch(env.nc, "s.x", fmt.Sprintf("b0.%d-5", i), 5); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		for reads := 0; ; reads++ {
			state := s.store.State()
			if state.Msgs%5 != 0 || state.LastSeq%5 != 0 {
				t.Fatalf("a reader saw %d messages, last %d: part of a batch", state.Msgs, state.LastSeq)
			}
			select {
			case <-done:
				if state := s.store.State(); state.Msgs != 200 {
					t.Fatalf("%d messages stored", state.Msgs)
				}
				return
			default:
			}
		}
	})
}
