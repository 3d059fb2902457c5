package server_test

import (
	"sync/atomic"
	"testing"

	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

// TestOnPingRunsBeforePong checks the hook runs once per PING, after the
// client's earlier publishes were routed and before its PONG is sent.
func TestOnPingRunsBeforePong(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	ic := s.InProcess("")
	var routed, seenAtPing, pings atomic.Int64
	if _, err := ic.Subscribe("cap.>", "", func(server.Msg) { routed.Add(1) }); err != nil {
		t.Fatal(err)
	}
	c := servertest.Dial(t, s)
	c.Connect(`{"verbose":false}`)
	s.OnPing(func() {
		pings.Add(1)
		seenAtPing.Store(routed.Load())
	})
	c.Send("PUB cap.a 1\r\na\r\nPUB cap.b 1\r\nb\r\nPING\r\n")
	c.Expect("PONG")
	if got := pings.Load(); got != 1 {
		t.Fatalf("hook ran %d times for one PING, want 1", got)
	}
	if got := seenAtPing.Load(); got != 2 {
		t.Fatalf("hook saw %d routed messages, want the 2 published before the PING", got)
	}
	s.OnPing(nil)
	c.Send("PING\r\n")
	c.Expect("PONG")
	if got := pings.Load(); got != 1 {
		t.Fatalf("hook ran after removal: %d calls", got)
	}
}
