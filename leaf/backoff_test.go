package leaf

import (
	"testing"
	"time"
)

// TestBackoffSpreadsAFleet checks the reconnect delay doubles from lo to
// the cap hi, and that the jitter spreads gateways over [d·(1-jitter), d]:
// with rnd at its extremes the delays are exactly the window's ends, so
// a fleet that lost the hub together comes back spread over that window.
func TestBackoffSpreadsAFleet(t *testing.T) {
	const lo, hi, jitter = 100 * time.Millisecond, 10 * time.Second, 0.5
	want := []time.Duration{lo, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 6400 * time.Millisecond, hi, hi, hi}
	for n, d := range want {
		if got := backoff(n, lo, hi, jitter, func() float64 { return 0 }); got != d {
			t.Fatalf("failures=%d, no jitter drawn: %v, want %v", n, got, d)
		}
		if got, low := backoff(n, lo, hi, jitter, func() float64 { return 1 }), d/2; got != low {
			t.Fatalf("failures=%d, full jitter: %v, want %v", n, got, low)
		}
	}
	if got := backoff(1000, lo, hi, jitter, func() float64 { return 0 }); got != hi {
		t.Fatalf("many failures: %v, want the cap %v", got, hi)
	}
	// A fleet of 1,000 gateways with uniform draws covers the window
	// evenly: each tenth of [5s, 10s] gets about a tenth of them.
	var buckets [10]int
	for i := range 1000 {
		d := backoff(20, lo, hi, jitter, func() float64 { return (float64(i) + 0.5) / 1000 })
		buckets[int((d-hi/2)*10/(hi/2+1))]++
	}
	for i, n := range buckets {
		if n < 90 || n > 110 {
			t.Fatalf("bucket %d of the window holds %d of 1000 gateways: %v", i, n, buckets)
		}
	}
}
