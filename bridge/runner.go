package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"
)

// Backoff defaults: the first restart waits about DefaultBackoffMin, each
// failure doubles the wait up to DefaultBackoffMax, and a connection that
// stayed up DefaultBackoffStable starts over from the minimum.
const (
	DefaultBackoffMin    = 100 * time.Millisecond
	DefaultBackoffMax    = 30 * time.Second
	DefaultBackoffStable = 10 * time.Second
)

// Backoff is how a Runner waits between a failed Run and the next. The
// zero value uses the defaults.
type Backoff struct {
	// Min is the wait after the first failure (DefaultBackoffMin when 0).
	Min time.Duration
	// Max caps the wait (DefaultBackoffMax when 0).
	Max time.Duration
	// Stable is how long a connection must have stayed up for the next
	// failure to wait Min again (DefaultBackoffStable when 0).
	Stable time.Duration
	// Jitter returns a number in [0, 1) that spreads each wait over
	// [d/2, d); nil uses math/rand/v2. Tests pass a fixed function.
	Jitter func() float64
}

// withDefaults returns b with its zero fields set.
func (b Backoff) withDefaults() Backoff {
	if b.Min <= 0 {
		b.Min = DefaultBackoffMin
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoffMax
	}
	b.Max = max(b.Max, b.Min)
	if b.Stable <= 0 {
		b.Stable = DefaultBackoffStable
	}
	if b.Jitter == nil {
		b.Jitter = rand.Float64
	}
	return b
}

// delay returns the wait after the n-th consecutive failure (n ≥ 1):
// Min·2ⁿ⁻¹ capped at Max, jittered over its upper half.
func (b Backoff) delay(n int) time.Duration {
	d := b.Min
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	half := d / 2
	return half + time.Duration(b.Jitter()*float64(d-half))
}

// errReturnedEarly is recorded when a bridge's Run returns nil although
// it was not asked to stop.
var errReturnedEarly = errors.New("bridge: Run returned before it was stopped")

// Runner runs one Bridge: it calls Run, and after a failure waits out a
// jittered exponential backoff and calls it again, until Close or the
// context given to Start ends. It keeps the bridge's Status: StateStarting
// before each Run, StateDisconnected and the error after a failure,
// StateStopped once stopped. A Runner runs once: Start it, then Close it.
type Runner struct {
	bridge  Bridge
	env     Env
	backoff Backoff

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{} // closed when the run loop has returned
}

// NewRunner returns a Runner for b. env.Status is created when nil and
// env.Logger discards when nil.
func NewRunner(b Bridge, env Env, backoff Backoff) *Runner {
	if env.Status == nil {
		env.Status = new(Status)
	}
	if env.Logger == nil {
		env.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{bridge: b, env: env, backoff: backoff.withDefaults(), done: make(chan struct{})}
}

// Status returns the Status the bridge reports through.
func (r *Runner) Status() *Status { return r.env.Status }

// Done returns a channel closed once the runner has stopped for good
// (after Close, or when Start's context ended).
func (r *Runner) Done() <-chan struct{} { return r.done }

// Start runs the bridge in a goroutine of its own until Close is called
// or ctx ends. Calling it again does nothing.
func (r *Runner) Start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started = true
	ctx, r.cancel = context.WithCancel(ctx)
	r.env.Status.SetState(StateStarting)
	go r.loop(ctx)
}

// Close stops the bridge: it cancels Run's context and waits for Run to
// return. If ctx ends first it returns ctx's error, and the bridge stops
// in the background. A Runner that was never started is marked stopped
// at once. Calling Close again waits the same way.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	if !r.started {
		r.started = true
		r.env.Status.SetState(StateStopped)
		close(r.done)
	}
	cancel := r.cancel
	r.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("bridge: stopping: %w", ctx.Err())
	}
}

// loop calls Run until ctx ends, with a backoff after each failure.
func (r *Runner) loop(ctx context.Context) {
	st, log := r.env.Status, r.env.Logger
	defer func() {
		st.SetState(StateStopped)
		close(r.done)
	}()
	failures := 0
	for {
		st.SetState(StateStarting)
		connects, _ := st.connection()
		err := r.run(ctx)
		if ctx.Err() != nil {
			if err != nil && !errors.Is(err, context.Canceled) {
				log.Warn("bridge stopped with an error", "error", err)
			}
			return
		}
		if err == nil {
			err = errReturnedEarly
		}
		// A connection that stayed up long enough ends the run of failures.
		if n, at := st.connection(); n > connects && time.Since(at) >= r.backoff.Stable {
			failures = 0
		}
		failures++
		wait := r.backoff.delay(failures)
		st.SetError(err)
		st.SetState(StateDisconnected)
		log.Warn("bridge failed; restarting after a backoff", "error", err, "backoff", wait, "failures", failures)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// run calls the bridge's Run, turning a panic into an error so that one
// faulty bridge does not take the gateway down.
func (r *Runner) run(ctx context.Context) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.env.Logger.Error("bridge panicked", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("bridge: panic: %v", p)
		}
	}()
	return r.bridge.Run(ctx, r.env)
}
