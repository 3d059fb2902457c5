package bridgetest

import (
	"context"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
)

// RunBridge runs br under a bridge.Runner with short backoffs (10 ms to
// 50 ms) on a bus of its own until the test ends, and returns its Status.
// The Runner must stop cleanly at the end.
func (b *Broker) RunBridge(t testing.TB, br bridge.Bridge) *bridge.Status {
	t.Helper()
	bus, closeBus, err := b.Connect("")
	if err != nil {
		t.Fatalf("bridgetest: bus: %v", err)
	}
	r := bridge.NewRunner(br, bridge.Env{Bus: bus}, bridge.Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond})
	r.Start(context.Background())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("bridgetest: stopping the bridge: %v", err)
		}
		closeBus()
	})
	return r.Status()
}

// WaitStatus waits up to Timeout until cond holds for st, failing the
// test with what and the last snapshot otherwise.
func WaitStatus(t testing.TB, st *bridge.Status, what string, cond func(bridge.Snapshot) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := st.Wait(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v (status %+v)", what, err, st.Snapshot())
	}
}
