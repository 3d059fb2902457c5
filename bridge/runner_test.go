package bridge

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// runCall is one call of scriptBridge.Run, held until the test answers.
type runCall struct {
	ctx    context.Context
	env    Env
	at     time.Time
	result chan error // what Run returns
}

// scriptBridge hands each Run call to the test on runs and returns what
// the test sends back, or nil once its context ends (unless stubborn).
type scriptBridge struct {
	runs     chan runCall
	stubborn bool // ignore ctx: return only when answered
}

func newScriptBridge() *scriptBridge { return &scriptBridge{runs: make(chan runCall)} }

func (b *scriptBridge) Run(ctx context.Context, env Env) error {
	c := runCall{ctx: ctx, env: env, at: time.Now(), result: make(chan error, 1)}
	select {
	case b.runs <- c:
	case <-ctx.Done():
		return nil
	}
	if b.stubborn {
		return <-c.result
	}
	select {
	case err := <-c.result:
		return err
	case <-ctx.Done():
		return nil
	}
}

// next returns the next Run call, failing t after a minute of fake time.
func (b *scriptBridge) next(t *testing.T) runCall {
	t.Helper()
	select {
	case c := <-b.runs:
		return c
	case <-time.After(time.Minute):
		t.Fatal("no Run call")
		return runCall{}
	}
}

func zeroJitter() float64 { return 0 }

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second, Jitter: zeroJitter}.withDefaults()
	// Jitter 0 gives the lower end, half of Min·2ⁿ⁻¹ capped at Max.
	want := []time.Duration{50, 100, 200, 400, 500, 500, 500}
	for i, w := range want {
		require.Equal(t, b.delay(i+1), w*time.Millisecond, "delay after failure ", i+1)
	}
	// Any jitter stays within [d/2, d).
	for _, j := range []float64{0, 0.25, 0.5, 0.999999} {
		b.Jitter = func() float64 { return j }
		for n := 1; n < 70; n++ {
			d := min(100*time.Millisecond<<min(n-1, 20), time.Second)
			if got := b.delay(n); got < d/2 || got >= d {
				t.Fatalf("jitter %v, failure %d: delay %v outside [%v, %v)", j, n, got, d/2, d)
			}
		}
	}
	// The zero value is the documented defaults.
	z := Backoff{}.withDefaults()
	require.Equal(t, z.Min, DefaultBackoffMin, "default min")
	require.Equal(t, z.Max, DefaultBackoffMax, "default max")
	require.Equal(t, z.Stable, DefaultBackoffStable, "default stable")
}

// TestRunnerBackoff: failed runs are retried after doubling waits (capped),
// each error and the disconnected state are recorded, and a connection
// that stayed up Stable starts the backoff over.
func TestRunnerBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newScriptBridge()
		r := NewRunner(b, Env{}, Backoff{Min: 100 * time.Millisecond, Max: 400 * time.Millisecond, Stable: 5 * time.Second, Jitter: zeroJitter})
		r.Start(t.Context())
		defer func() { require.NoError(t, r.Close(t.Context()), "close") }()

		prev := b.next(t)
		require.Equal(t, r.Status().Snapshot().State, StateStarting, "state during the first run")
		// Waits of 50, 100, 200, 200 ms (jitter 0 halves Min·2ⁿ⁻¹ capped at Max).
		for i, want := range []time.Duration{50, 100, 200, 200} {
			prev.result <- errors.New("device gone " + string(rune('a'+i)))
			synctest.Wait()
			snap := r.Status().Snapshot()
			require.Equal(t, snap.State, StateDisconnected, "state after failure ", i)
			require.Equal(t, snap.LastError, "device gone "+string(rune('a'+i)), "last error")
			c := b.next(t)
			require.Equal(t, c.at.Sub(prev.at), want*time.Millisecond, "wait after failure ", i+1)
			prev = c
		}

		// Connected for less than Stable: the backoff keeps growing.
		prev.env.Status.SetState(StateConnected)
		time.Sleep(time.Second) // fake time: the connection's lifetime
		prev.result <- errors.New("dropped soon")
		c := b.next(t)
		require.Equal(t, c.at.Sub(prev.at), time.Second+200*time.Millisecond, "wait after a short connection")

		// Connected for Stable: the next wait is the first one again.
		c.env.Status.SetState(StateConnected)
		time.Sleep(5 * time.Second)
		c.result <- errors.New("dropped late")
		c2 := b.next(t)
		require.Equal(t, c2.at.Sub(c.at), 5*time.Second+50*time.Millisecond, "wait after a stable connection")
		// Two connections: one reconnect, counted by the state alone.
		require.Equal(t, r.Status().Snapshot().Reconnects, uint64(1), "reconnects")
		c2.env.Status.SetState(StateConnected)
		require.Equal(t, r.Status().Snapshot().Reconnects, uint64(2), "reconnects after the third connection")
		c2.env.Status.SetState(StateConnected)
		require.Equal(t, r.Status().Snapshot().Reconnects, uint64(2), "setting connected again is no reconnect")
	})
}

// TestRunnerClose: Close cancels Run's context, waits for it, and leaves
// the bridge stopped; a Close during the backoff ends the wait.
func TestRunnerClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newScriptBridge()
		r := NewRunner(b, Env{}, Backoff{Min: time.Hour, Jitter: zeroJitter})
		r.Start(t.Context())
		c := b.next(t)
		require.NoError(t, r.Close(t.Context()), "close")
		require.ErrorIs(t, c.ctx.Err(), context.Canceled, "Run's context after Close")
		require.Equal(t, r.Status().Snapshot().State, StateStopped, "state after Close")
		select {
		case <-r.Done():
		default:
			t.Fatal("Done not closed after Close")
		}
		require.NoError(t, r.Close(t.Context()), "second close")

		// Closed while waiting out an hour's backoff: returns at once.
		b = newScriptBridge()
		r = NewRunner(b, Env{}, Backoff{Min: time.Hour, Jitter: zeroJitter})
		r.Start(t.Context())
		b.next(t).result <- errors.New("fail")
		synctest.Wait()
		start := time.Now()
		require.NoError(t, r.Close(t.Context()), "close during backoff")
		require.Equal(t, time.Since(start), time.Duration(0), "time Close took")
		require.Equal(t, r.Status().Snapshot().State, StateStopped, "state")

		// The parent context ending stops the runner too.
		ctx, cancel := context.WithCancel(t.Context())
		b = newScriptBridge()
		r = NewRunner(b, Env{}, Backoff{})
		r.Start(ctx)
		b.next(t)
		cancel()
		<-r.Done()
		require.Equal(t, r.Status().Snapshot().State, StateStopped, "state after the context ended")

		// Never started: stopped at once.
		r = NewRunner(newScriptBridge(), Env{}, Backoff{})
		require.NoError(t, r.Close(t.Context()), "close unstarted")
		require.Equal(t, r.Status().Snapshot().State, StateStopped, "unstarted state")
	})
}

// TestRunnerCloseTimeout: a bridge that ignores its context makes Close
// return ctx's error; the runner still stops once Run returns.
func TestRunnerCloseTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newScriptBridge()
		b.stubborn = true
		r := NewRunner(b, Env{}, Backoff{})
		r.Start(t.Context())
		c := b.next(t)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		err := r.Close(ctx)
		require.ErrorIs(t, err, context.DeadlineExceeded, "close of a stuck bridge")
		c.result <- nil
		<-r.Done()
		require.Equal(t, r.Status().Snapshot().State, StateStopped, "state once Run returned")
	})
}

// panicBridge panics in its first Run and then waits for its context.
type panicBridge struct{ runs int }

func (b *panicBridge) Run(ctx context.Context, env Env) error {
	b.runs++
	if b.runs == 1 {
		panic("boom")
	}
	env.Status.SetState(StateConnected)
	<-ctx.Done()
	return nil
}

// earlyBridge returns nil at once, as if stopped, without being asked.
type earlyBridge struct{}

func (earlyBridge) Run(context.Context, Env) error { return nil }

// TestRunnerFaultyBridges: a panic in Run and a Run that returns nil
// unasked are failures: recorded and retried, never fatal.
func TestRunnerFaultyBridges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pb := &panicBridge{}
		r := NewRunner(pb, Env{}, Backoff{Jitter: zeroJitter})
		r.Start(t.Context())
		require.NoError(t, r.Status().Wait(t.Context(), func(s Snapshot) bool { return s.State == StateConnected }), "wait connected")
		snap := r.Status().Snapshot()
		require.Equal(t, pb.runs, 2, "runs")
		require.Equal(t, snap.LastError, "bridge: panic: boom", "last error")
		require.NoError(t, r.Close(t.Context()), "close")

		r = NewRunner(earlyBridge{}, Env{}, Backoff{Jitter: zeroJitter})
		r.Start(t.Context())
		require.NoError(t, r.Status().Wait(t.Context(), func(s Snapshot) bool { return s.State == StateDisconnected }), "wait disconnected")
		if got := r.Status().Snapshot().LastError; !strings.Contains(got, "returned before it was stopped") {
			t.Fatalf("last error %q, want the early return named", got)
		}
		require.NoError(t, r.Close(t.Context()), "close")
	})
}

// TestStatusWait: Wait returns once the condition holds, and ctx's error
// when it never does.
func TestStatusWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Status
		done := make(chan error, 1)
		go func() {
			done <- s.Wait(t.Context(), func(sn Snapshot) bool { return sn.In >= 3 && sn.Drops[DropQueueFull] == 1 })
		}()
		s.CountIn(2)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Wait returned early: %v", err)
		default:
		}
		s.CountIn(1)
		s.CountDrop(DropQueueFull)
		require.NoError(t, <-done, "wait")

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		require.ErrorIs(t, s.Wait(ctx, func(sn Snapshot) bool { return sn.Out > 0 }), context.DeadlineExceeded, "wait that never holds")
	})
}
