//go:build !linux

package clock

import (
	"crypto/rand"
	"encoding/hex"
	"time"
)

// processStart anchors the monotonic clock: without CLOCK_BOOTTIME the
// time line is the process's, and so is the boot id.
var processStart = time.Now()

// osMono returns the time since the process started.
func osMono() time.Duration { return time.Since(processStart) }

// osResync does nothing: there is no boot clock to follow.
func osResync() {}

// osSynced reports false: no portable way to ask.
func osSynced() bool { return false }

// osBootID returns a random id for this process.
func osBootID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "p-" + hex.EncodeToString(b[:])
}
