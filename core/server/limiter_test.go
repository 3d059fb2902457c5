package server

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestLogLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLogLimiter(3, time.Second)
		allow := func(wantOK bool, wantSuppressed int) {
			t.Helper()
			ok, n := l.allow()
			if ok != wantOK || n != wantSuppressed {
				t.Fatalf("allow() = %v, %d; want %v, %d", ok, n, wantOK, wantSuppressed)
			}
		}
		// A burst passes, then lines are counted, not logged.
		allow(true, 0)
		allow(true, 0)
		allow(true, 0)
		allow(false, 0)
		allow(false, 0)
		// Less than a refill: still held back.
		time.Sleep(999 * time.Millisecond)
		allow(false, 0)
		// One token back: the line reports the three suppressed before it.
		time.Sleep(time.Millisecond)
		allow(true, 3)
		allow(false, 0)
		// A long quiet period refills the bucket to its size, no more.
		time.Sleep(time.Hour)
		allow(true, 1)
		allow(true, 0)
		allow(true, 0)
		allow(false, 0)
		// Tokens come back one per interval.
		time.Sleep(2500 * time.Millisecond)
		allow(true, 1)
		allow(true, 0)
		allow(false, 0)
		time.Sleep(500 * time.Millisecond)
		allow(true, 1)
	})
}
