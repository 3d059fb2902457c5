package leaf

import "time"

// backoff returns the delay before the reconnect that follows failures
// consecutive failed attempts (0 after a connection that was up): it
// doubles from lo up to hi, and the fraction jitter of it is randomised
// with rnd (uniform in [0, 1)), so the result lies in [d·(1-jitter), d].
// The jitter spreads a fleet of gateways that lost the same hub at the same
// moment over the window instead of having them all reconnect at once.
func backoff(failures int, lo, hi time.Duration, jitter float64, rnd func() float64) time.Duration {
	d := lo
	for i := 0; i < failures && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d - time.Duration(float64(d)*jitter*rnd())
}
