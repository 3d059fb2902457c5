// Package changes wakes goroutines that wait for a condition on some
// state whenever the state changes: the outbox's and downlink's status
// (leaf/internal/runstate) and the bridges' (bridge.Status) wait on it
// instead of polling.
package changes

import (
	"context"
	"sync"
	"sync/atomic"
)

// Notifier wakes the goroutines waiting for a condition on a status (Wait)
// whenever the status changes (Notify). The zero value is ready; it is
// safe for concurrent use.
//
// Notify costs one atomic load while no one waits, so hot paths (a
// capture on a publisher's read goroutine) may call it on every change.
// A waiter gets a channel that the next Notify closes; mu serializes the
// waiters that make a new one and is held alone.
type Notifier struct {
	next atomic.Pointer[chan struct{}] // closed by the next Notify; nil while no one waits
	mu   sync.Mutex
}

// Notify wakes every goroutine in Wait to check its condition again. Call
// it after the change is visible to the condition.
func (c *Notifier) Notify() {
	if c.next.Load() == nil {
		return
	}
	if ch := c.next.Swap(nil); ch != nil {
		close(*ch)
	}
}

// Wait returns nil once done reports true, checking it at once and after
// each Notify, or ctx's error when ctx ends first.
func (c *Notifier) Wait(ctx context.Context, done func() bool) error {
	for {
		ch := c.channel() // taken before the check: a change after it closes ch
		if done() {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// channel returns the channel the next Notify closes.
func (c *Notifier) channel() <-chan struct{} {
	if ch := c.next.Load(); ch != nil {
		return *ch
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.next.Load(); ch != nil {
		return *ch
	}
	ch := make(chan struct{})
	c.next.Store(&ch)
	return ch
}
