// Package runstate holds what the outbox's forwarder and the downlink's
// puller share in running: the state and last error they report, the
// randomised exponential backoff between their attempts and the wait for
// it, a non-blocking wake-up, and the wait for a condition on their
// status that every change wakes (core/changes).
package runstate

import (
	"context"
	mathrand "math/rand/v2"
	"sync"
	"time"

	"github.com/leafbox/leafbox/core/changes"
)

// Tracker records a run loop's state and its last error, and wakes the
// waiters on its owner's status (Wait) when they or anything else the
// owner reports changes (Changed). Its zero value holds the zero state
// and no error; once Close is called, Set no longer changes the state. A
// Tracker is safe for concurrent use.
type Tracker[S ~string] struct {
	changes   changes.Notifier
	mu        sync.Mutex
	state     S
	closed    bool
	lastErr   string
	lastErrAt time.Time
}

// Set records st as the state, unless the tracker is closed.
func (r *Tracker[S]) Set(st S) {
	r.mu.Lock()
	if !r.closed {
		r.state = st
	}
	r.mu.Unlock()
	r.changes.Notify()
}

// Close records st as the final state.
func (r *Tracker[S]) Close(st S) {
	r.mu.Lock()
	r.state, r.closed = st, true
	r.mu.Unlock()
	r.changes.Notify()
}

// SetError records err, which must not be nil, as the last error, at the
// current time.
func (r *Tracker[S]) SetError(err error) {
	r.mu.Lock()
	r.lastErr, r.lastErrAt = err.Error(), time.Now()
	r.mu.Unlock()
	r.changes.Notify()
}

// Changed wakes the waiters (Wait) after a change of the owner's status
// other than the state and error, such as a counter. It costs one atomic
// load while no one waits.
func (r *Tracker[S]) Changed() { r.changes.Notify() }

// Wait returns nil once done reports true, checking it at once and after
// every change (Set, Close, SetError, Changed), or ctx's error when ctx
// ends first.
func (r *Tracker[S]) Wait(ctx context.Context, done func() bool) error {
	return r.changes.Wait(ctx, done)
}

// State returns the state.
func (r *Tracker[S]) State() S {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state
}

// Snapshot returns the state, the last error's text and when it was
// recorded ("" and the zero time when none was), read together.
func (r *Tracker[S]) Snapshot() (state S, lastErr string, lastErrAt time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.state, r.lastErr, r.lastErrAt
}

// Backoff returns the wait after n consecutive failures: lo·2^n, capped
// at hi, the upper half of it randomised. lo and hi must be positive.
func Backoff(n int, lo, hi time.Duration) time.Duration {
	d := hi
	if n >= 0 && n < 30 {
		d = min(lo<<n, hi)
	}
	return d/2 + time.Duration(mathrand.Int64N(int64(d/2)+1))
}

// Sleep waits for d, or until ctx ends; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Signal wakes a waiter on ch (a channel with a buffer of one) without
// blocking: a wake-up already pending absorbs this one.
func Signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
