package clock

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// maxSyncedError is the largest maximum error (µs) adjtimex may report for
// a clock leafbox calls synchronised; the kernel lets it grow to 16 s
// (NTP_PHASE_LIMIT) when nothing disciplines the clock.
const maxSyncedError = 16_000_000

// processStart anchors the monotonic clock: osMono is Go's monotonic
// time since processStart plus bootOffset, CLOCK_BOOTTIME at processStart
// as last measured. Go's clock is read through the vDSO; CLOCK_BOOTTIME
// costs a system call, so it is read only by resyncMono.
var (
	processStart = time.Now()
	bootOffset   atomic.Int64
)

func init() { osResync() }

// osMono returns the time since boot.
func osMono() time.Duration {
	return time.Duration(bootOffset.Load()) + time.Since(processStart)
}

// osResync measures CLOCK_BOOTTIME again. Go's monotonic clock stops
// during suspend and CLOCK_BOOTTIME does not, so the offset between them
// grows after a suspend; osResync moves osMono forward by that much (never
// backward). Without CLOCK_BOOTTIME the offset stays 0: the time since the
// process started (osBootID is then random per process).
func osResync() {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return
	}
	d := int64(time.Duration(ts.Nano()) - time.Since(processStart))
	for {
		old := bootOffset.Load()
		if d <= old || bootOffset.CompareAndSwap(old, d) {
			return
		}
	}
}

// osSynced asks adjtimex (read-only) whether the kernel's clock is
// synchronised.
func osSynced() bool {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if err != nil {
		return false
	}
	return state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0 && tx.Maxerror < maxSyncedError
}

// osBootID returns the kernel's boot id, or a random id when it cannot be
// read (then osMono must fall back too: see randomBootID).
func osBootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if id := strings.TrimSpace(string(b)); err == nil && id != "" {
		var ts unix.Timespec
		if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) == nil {
			return id
		}
	}
	return randomBootID()
}

// randomBootID returns a random id for a process whose monotonic clock
// starts with it.
func randomBootID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "p-" + hex.EncodeToString(b[:])
}
