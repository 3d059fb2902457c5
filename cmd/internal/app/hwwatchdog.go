package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/watchdog"
)

// watchdogFeed is the byte that feeds a hardware watchdog; any byte but
// 'V' does. watchdogMagicClose ("V" then close) disarms it, so that a
// clean stop does not reset the board (a crash, which writes no "V",
// does).
const (
	watchdogFeed       = "."
	watchdogMagicClose = "V"
)

// HardwareWatchdog feeds a watchdog device (the Linux watchdog API:
// /dev/watchdog) while a health check passes. Open it, Run it in a
// goroutine of its own, and cancel Run's context on a clean stop.
type HardwareWatchdog struct {
	f    *os.File
	path string
}

// OpenHardwareWatchdog opens the watchdog device at path for writing;
// opening /dev/watchdog arms it.
func OpenHardwareWatchdog(path string) (*HardwareWatchdog, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	return &HardwareWatchdog{f: f, path: path}, nil
}

// Close closes the device without the magic close, for a watchdog that
// is opened but never Run.
func (w *HardwareWatchdog) Close() error { return w.f.Close() }

// Path returns the device's path.
func (w *HardwareWatchdog) Path() string { return w.path }

// Run feeds the device every interval while check (the liveness check of
// App.Liveness, the one gating the systemd watchdog) returns nil, one
// check at a time; a failing check, or one still running at the next
// tick, withholds the feed and is passed to onFail. When ctx is done it
// writes the magic close ("V"), closes the device and returns.
func (w *HardwareWatchdog) Run(ctx context.Context, interval time.Duration, check func() error, onFail func(error)) {
	defer func() {
		if _, err := w.f.WriteString(watchdogMagicClose); err != nil && onFail != nil {
			onFail(fmt.Errorf("watchdog %s: magic close: %w", w.path, err))
		}
		_ = w.f.Close()
	}()
	watchdog.Run(ctx, interval, check, func() error {
		if _, err := w.f.WriteString(watchdogFeed); err != nil {
			return fmt.Errorf("watchdog %s: %w", w.path, err)
		}
		return nil
	}, onFail)
}
