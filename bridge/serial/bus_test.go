package serial

// The bridge's tests run on bridgetest's real broker with JetStream, the
// bridge under bridge.Runner as leafbox runs it, and a nats.go client for
// the test's side.

import (
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/bridgetest"
	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nats.go"
)

type testBroker struct {
	*bridgetest.Broker
	nc *nats.Conn
}

func newTestBroker(t *testing.T) *testBroker {
	t.Helper()
	b := bridgetest.NewBroker(t)
	nc, err := nats.Connect(b.Server.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return &testBroker{Broker: b, nc: nc}
}

// subscribe returns a channel of the messages on subj.
func (tb *testBroker) subscribe(t *testing.T, subj string) <-chan *nats.Msg {
	t.Helper()
	ch := make(chan *nats.Msg, 1024)
	sub, err := tb.nc.ChanSubscribe(subj, ch)
	require.NoError(t, err)
	require.NoError(t, tb.nc.Flush())
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	return ch
}

// runBridge runs b until the test ends (bridgetest.Broker.RunBridge).
func runBridge(t *testing.T, b bridge.Bridge, tb *testBroker) *bridge.Status {
	t.Helper()
	return tb.RunBridge(t, b)
}

// waitFor waits until cond holds for the bridge's status.
func waitFor(t *testing.T, st *bridge.Status, what string, cond func(bridge.Snapshot) bool) {
	t.Helper()
	bridgetest.WaitStatus(t, st, what, cond)
}

func connected(s bridge.Snapshot) bool { return s.State == bridge.StateConnected }

// next returns the next message from ch, or fails after a while.
func next(t *testing.T, ch <-chan *nats.Msg, what string) *nats.Msg {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(bridgetest.Timeout):
		t.Fatalf("timed out waiting for %s", what)
		return nil
	}
}

// none requires that nothing is waiting on ch.
func none(t *testing.T, ch <-chan *nats.Msg, what string) {
	t.Helper()
	select {
	case m := <-ch:
		t.Fatalf("%s: unexpected message %q on %s", what, m.Data, m.Subject)
	default:
	}
}
