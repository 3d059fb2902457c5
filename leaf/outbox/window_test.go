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
	// Each new round starts at half the last one's size, down to the floor.
	w.reset()
	require.Equal(t, 32, w.size)
	w.reset()
	require.Equal(t, 16, w.size)
	w.reset()
	require.Equal(t, 16, w.size)

	fixed := newWindow(8, 8, DefaultMaxWindowBytes)
	require.Equal(t, 8, simulateLink(&fixed, 100*time.Millisecond, 10000, 2*time.Second))

	bytes := newWindow(4, 1000, 1000) // 100 B a message in simulateLink: at most 10
	simulateLink(&bytes, 100*time.Millisecond, 10000, time.Second)
	require.Equal(t, false, bytes.open(10, 1000))
	require.Equal(t, true, bytes.open(9, 900))
}

// simulateFlowAcks runs the window against a link of the given round
// trip and capacity (messages per second) for d of simulated time, a
// backlog always waiting, with the acks of a fast batch: one flow ack
// for every group messages, each covering them all (ackedGroup). It
// returns how many messages were acked and the window's size at probe,
// since the start.
func simulateFlowAcks(w *window, rtt time.Duration, capacity float64, group int, d, probe time.Duration) (ackedAtProbe, sizeAtProbe int) {
	start := time.Unix(1_000_000, 0)
	now, end := start, start.Add(d)
	var sent, arrived []time.Time // send times; when each reaches the hub's store plus the way back
	acked := 0
	linkFree := now
	perMsg := time.Duration(float64(time.Second) / capacity)
	probed := false
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
		if !probed && now.Sub(start) >= probe {
			ackedAtProbe, sizeAtProbe, probed = acked, w.size, true
		}
		now = now.Add(time.Millisecond)
	}
	return ackedAtProbe, sizeAtProbe
}

// TestWindowFollowsFlowAcks is TestWindowFollowsBandwidthDelayProduct with
// the acks of a fast batch.
func TestWindowFollowsFlowAcks(t *testing.T) {
	w := newWindow(DefaultWindow, DefaultMaxWindow, DefaultMaxWindowBytes)
	reached, _ := simulateFlowAcks(&w, 300*time.Millisecond, 5000, 128, 10*time.Second, 2*time.Second)
	t.Logf("window %d, %d acked in the first 2 s", w.size, reached)
	if w.size < 1500 || w.size > 4*1500 {
		t.Fatalf("window %d messages, want about twice the product of 1,500", w.size)
	}
	if reached < 5000 { // 2 s at 5,000 msgs/s is 10,000: at least half, growth included
		t.Fatalf("%d messages acked in the first 2 s, want at least 5,000", reached)
	}
}

// TestWindowGrowsFromFlowAckSpacing: on a 600 ms link carrying 3,400
// messages a second (10 Mbit/s of 370 B messages) the first flow acks of
// a full window come back spaced by the link's rate, so the window covers
// the bandwidth-delay product (2,040) one round trip in, not after the
// four round trips of fourfold growth from 256.
func TestWindowGrowsFromFlowAckSpacing(t *testing.T) {
	w := newWindow(DefaultWindow, DefaultMaxWindow, DefaultMaxWindowBytes)
	_, size := simulateFlowAcks(&w, 600*time.Millisecond, 3400, 128, 800*time.Millisecond, 700*time.Millisecond)
	t.Logf("window %d at 0.7 s", size)
	if size < 2040 {
		t.Fatalf("window %d messages 0.7 s in, want at least the product of 2,040", size)
	}
	// A window kept full for long settles near twice the product.
	w = newWindow(DefaultWindow, DefaultMaxWindow, DefaultMaxWindowBytes)
	acked, _ := simulateFlowAcks(&w, 600*time.Millisecond, 3400, 128, 10*time.Second, 4*time.Second)
	t.Logf("window %d after 10 s, %d acked in the first 4 s", w.size, acked)
	if w.size < 2040 || w.size > 4*2040 {
		t.Fatalf("window %d messages, want about twice the product of 2,040", w.size)
	}
	if acked < 9000 { // 256 in the first round trip, then 3,400 a second from 1.3 s: 9,500
		t.Fatalf("%d messages acked in the first 4 s, want at least 9,000", acked)
	}
	// A compressed link carrying 28,000 messages a second spaces the two
	// flow acks of the first window 4.6 ms apart: enough to size it in one
	// round trip, to the product of 16,800 (a slow start would take three).
	w = newWindow(DefaultWindow, DefaultMaxWindow, DefaultMaxWindowBytes)
	_, size = simulateFlowAcks(&w, 600*time.Millisecond, 28000, 128, 800*time.Millisecond, 700*time.Millisecond)
	t.Logf("compressed link: window %d at 0.7 s", size)
	if size < 16800 {
		t.Fatalf("window %d messages 0.7 s in on the compressed link, want at least the product of 16,800", size)
	}
}
