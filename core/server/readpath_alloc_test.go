//go:build !race

package server

import (
	"context"
	"runtime"
	"testing"
)

// TestPublishOnlyAllocs requires the publish-only read path (PUBs with no
// interest, through the read loop, parser, match memo and counters) to
// allocate nothing per message: a connection that replays 200,000
// recorded `nats bench pub` PUBs may allocate only what any connection
// does, a bounded number that does not grow with the messages.
func TestPublishOnlyAllocs(t *testing.T) {
	s, err := New(Options{Host: "127.0.0.1", Port: RandomPort})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Shutdown(context.Background()) })
	run := func(msgs int) uint64 {
		conn := newReplayConn(t, natsBenchPub16, msgs, 32<<10)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s.connsDone.Add(1)
		s.serveConn(conn)
		runtime.ReadMemStats(&after)
		return after.Mallocs - before.Mallocs
	}
	run(1000) // warm up
	few, many := run(1000), run(200_000)
	// 199,000 more messages may cost a handful of allocations (a timer, a
	// map growing in the runtime), not one per message or per read.
	if many > few+20 {
		t.Fatalf("1,000 PUBs: %d allocations; 200,000 PUBs: %d", few, many)
	}
	if got := s.stats.inMsgs.Load(); got != 202_000 {
		t.Fatalf("server counted %d messages, want 202,000", got)
	}
}
