package outbox

import (
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// simulateLink runs the window against a link of the given round trip
// and capacity (messages per second) for d of simulated time, a backlog
// always waiting, and returns the window size at the end.
func simulateLink(w *window, rtt time.Duration, capacity float64, d time.Duration) int {
	type sent struct{ at, ackAt time.Time }
	now := time.Unix(1_000_000, 0)
	end := now.Add(d)
	var flight []sent
	linkFree := now // when the link has carried everything sent so far
	step := time.Millisecond
	perMsg := time.Duration(float64(time.Second) / capacity)
	for now.Before(end) {
		for len(flight) > 0 && !flight[0].ackAt.After(now) {
			w.acked(now, flight[0].at)
			flight = flight[1:]
		}
		for w.open(len(flight), len(flight)*100) {
			if linkFree.Before(now) {
				linkFree = now
			}
			linkFree = linkFree.Add(perMsg)
			flight = append(flight, sent{at: now, ackAt: linkFree.Add(rtt)})
		}
		now = now.Add(step)
	}
	return w.size
}

func TestWindowFollowsBandwidthDelayProduct(t *testing.T) {
	// 300 ms and 5,000 msgs/s: 1,500 messages in flight fill the link.
	w := newWindow(DefaultWindow, DefaultMaxWindow, DefaultMaxWindowBytes)
	size := simulateLink(&w, 300*time.Millisecond, 5000, 10*time.Second)
	t.Logf("window %d", size)
	if size < 1500 || size > 4*1500 {
		t.Fatalf("window %d messages, want about twice the product of 1,500", size)
	}
	require.Equal(t, 300*time.Millisecond, w.minRTT.Round(10*time.Millisecond))
}

func TestWindowStaysWithinBounds(t *testing.T) {
	w := newWindow(16, 64, DefaultMaxWindowBytes)
	require.Equal(t, 64, simulateLink(&w, 500*time.Millisecond, 10000, 10*time.Second))
	w.reset()
	require.Equal(t, 16, w.size)

	fixed := newWindow(8, 8, DefaultMaxWindowBytes)
	require.Equal(t, 8, simulateLink(&fixed, 100*time.Millisecond, 10000, 2*time.Second))

	bytes := newWindow(4, 1000, 1000) // 100 B a message in simulateLink: at most 10
	simulateLink(&bytes, 100*time.Millisecond, 10000, time.Second)
	require.Equal(t, false, bytes.open(10, 1000))
	require.Equal(t, true, bytes.open(9, 900))
}

// TestWindowFollowsFlowAcks is TestWindowFollowsBandwidthDelayProduct with
// the acks of a fast batch: one flow ack for every 128 messages, each
// covering them all (ackedGroup).
func TestWindowFollowsFlowAcks(t *testing.T) {
	const group = 128
	w := newWindow(DefaultWindow, DefaultMaxWindow, DefaultMaxWindowBytes)
	rtt, capacity := 300*time.Millisecond, 5000.0
	now := time.Unix(1_000_000, 0)
	end := now.Add(10 * time.Second)
	var sent, arrived []time.Time // send times; when each reaches the hub's store plus the way back
	acked := 0
	linkFree := now
	perMsg := time.Duration(float64(time.Second) / capacity)
	reached := 0 // when 2 s in, how many messages had been acked
	for now.Before(end) {
		// A flow ack leaves after every group-th message; it covers all before it.
		for acked+group <= len(sent) && !arrived[acked+group-1].After(now) {
			w.ackedGroup(now, sent[acked:acked+group])
			acked += group
		}
		for w.open(len(sent)-acked, (len(sent)-acked)*100) {
			if linkFree.Before(now) {
				linkFree = now
			}
			linkFree = linkFree.Add(perMsg)
			sent = append(sent, now)
			arrived = append(arrived, linkFree.Add(rtt))
		}
		if reached == 0 && now.Sub(time.Unix(1_000_000, 0)) >= 2*time.Second {
			reached = acked
		}
		now = now.Add(time.Millisecond)
	}
	t.Logf("window %d, %d acked in the first 2 s", w.size, reached)
	if w.size < 1500 || w.size > 4*1500 {
		t.Fatalf("window %d messages, want about twice the product of 1,500", w.size)
	}
	if reached < 5000 { // 2 s at 5,000 msgs/s is 10,000: at least half, growth included
		t.Fatalf("%d messages acked in the first 2 s, want at least 5,000", reached)
	}
}
