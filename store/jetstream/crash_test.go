package jetstream

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/vfs"
)

var errPowerCut = errors.New("power cut")

// TestCrashDuringPublishStorm cuts the power (drops every write not yet
// fsynced) while a client publishes asynchronously into a file stream in
// sync-always mode, then restarts on what is left: every message whose
// PubAck arrived before the cut must be there with its sequence and data,
// and the durable consumer must resume at its recorded ack floor.
func TestCrashDuringPublishStorm(t *testing.T) {
	t.Parallel()
	mem := vfs.NewStrictMem()
	var cut atomic.Bool
	crashable := vfs.Inject(mem, func(op vfs.Op, _ string) error {
		if cut.Load() && op.Mutates() {
			return errPowerCut
		}
		return nil
	})
	env := &testEnv{t: t, cfg: Config{StoreDir: "/js"}, fs: crashable}
	env = newTestEnvWith(t, env)
	ctx := testCtx(t)
	s, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s"}, Storage: njs.FileStorage})
	require.NoError(t, err)
	c, err := s.CreateConsumer(ctx, njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy, AckWait: time.Hour})
	require.NoError(t, err)
	publishN(t, env.js, "s", 20)
	batch, err := c.Fetch(10)
	require.NoError(t, err)
	for m := range batch.Messages() {
		require.NoError(t, m.DoubleAck(ctx))
	}
	flushState(t, env.eng, "S", "D")

	// The storm: async publishes; acks are recorded as they arrive.
	var (
		mu    sync.Mutex
		acked = map[uint64]string{}
	)
	stop := make(chan struct{})
	stormDone := make(chan struct{})
	go func() {
		defer close(stormDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			body := fmt.Sprint("storm-", i)
			f, err := env.js.PublishAsync("s", []byte(body))
			if err != nil {
				return
			}
			go func() {
				select {
				case ack := <-f.Ok():
					mu.Lock()
					if !cut.Load() {
						acked[ack.Sequence] = body
					}
					mu.Unlock()
				case <-f.Err():
				case <-stop:
				}
			}()
		}
	}()
	// Cut the power once a good number of acks arrived.
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 500 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("only %d acks before the deadline", n)
		case <-time.After(time.Millisecond):
		}
	}
	mu.Lock()
	cut.Store(true)
	survivors := make(map[uint64]string, len(acked))
	for seq, body := range acked {
		survivors[seq] = body
	}
	mu.Unlock()
	mem.ResetToSyncedState()
	close(stop)
	<-stormDone

	// The old engine is dead: drop its subscriptions and let it fail to
	// write; then start a new one on what survived.
	env.stop()
	_ = env.eng.Close()
	env.fs = mem
	env.startEngine()

	s, err = env.js.Stream(ctx, "S")
	require.NoError(t, err)
	for seq, body := range survivors {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("acked message %d lost: %v", seq, err)
		}
		require.Equal(t, string(m.Data), body)
	}
	if len(survivors) < 500 {
		t.Fatalf("only %d survivors", len(survivors))
	}
	c, err = s.Consumer(ctx, "D")
	require.NoError(t, err)
	require.Equal(t, c.CachedInfo().AckFloor.Stream, uint64(10))
	m, err := c.Next()
	require.NoError(t, err)
	meta, _ := m.Metadata()
	require.Equal(t, meta.Sequence.Stream, uint64(11))
}

// flushState writes the consumer's state to its store before returning,
// as a double-ack does.
func flushState(t *testing.T, e *Engine, stream, consumer string) {
	t.Helper()
	e.lookup(stream).lookupConsumer(consumer).flushStateNow()
}
