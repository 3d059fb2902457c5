package clock

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMonoFollowsBootTime: the cheap monotonic stamp stays on
// CLOCK_BOOTTIME's time line, and a resync never moves it backwards.
func TestMonoFollowsBootTime(t *testing.T) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatalf("CLOCK_BOOTTIME: %v", err)
	}
	boot := time.Duration(ts.Nano())
	mono := osMono()
	if d := mono - boot; d < -time.Millisecond || d > time.Second {
		t.Fatalf("osMono %v, CLOCK_BOOTTIME %v", mono, boot)
	}
	before := osMono()
	osResync()
	if after := osMono(); after < before {
		t.Fatalf("resync moved the stamp back from %v to %v", before, after)
	}
}
