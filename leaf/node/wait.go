package node

import (
	"context"
	"fmt"

	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/leaf/outbox"
)

// WaitUplink blocks until cond holds for the outbox status of the i-th
// running uplink (configuration order), or ctx ends (ctx.Err()). What
// wakes it is outbox.Outbox.Wait's: every change of the counters, state
// or last error. It is for tests and tools that wait on one outcome.
func (n *Node) WaitUplink(ctx context.Context, i int, cond func(outbox.Status) bool) error {
	ups := n.runningUplinks()
	if i < 0 || i >= len(ups) {
		return fmt.Errorf("node: no running uplink %d (%d running)", i, len(ups))
	}
	return ups[i].ob.Wait(ctx, cond)
}

// WaitDownlink blocks until cond holds for the status of the i-th running
// downlink (configuration order), or ctx ends (ctx.Err()); see
// downlink.Downlink.Wait for what wakes it.
func (n *Node) WaitDownlink(ctx context.Context, i int, cond func(downlink.Status) bool) error {
	n.mu.Lock()
	dls := n.downlinks
	n.mu.Unlock()
	if i < 0 || i >= len(dls) {
		return fmt.Errorf("node: no running downlink %d (%d running)", i, len(dls))
	}
	return dls[i].dl.Wait(ctx, cond)
}
