package bridge

import (
	"context"
	"sync"
	"sync/atomic"
)

// changes wakes the goroutines waiting for a condition on a Status
// whenever it changes. The zero value is ready. notify costs one atomic
// load while no one waits, so counters on hot paths may call it on every
// change; mu only serialises the waiters that make a new channel.
type changes struct {
	next atomic.Pointer[chan struct{}] // closed by the next notify; nil while no one waits
	mu   sync.Mutex
}

// notify wakes every waiter to check its condition again. Call it after
// the change is visible.
func (c *changes) notify() {
	if c.next.Load() == nil {
		return
	}
	if ch := c.next.Swap(nil); ch != nil {
		close(*ch)
	}
}

// wait returns nil once done reports true, checking it at once and after
// each notify, or ctx's error when ctx ends first.
func (c *changes) wait(ctx context.Context, done func() bool) error {
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

// channel returns the channel the next notify closes.
func (c *changes) channel() <-chan struct{} {
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
