package config

import (
	"time"
)

// DefaultWatchdogInterval is how often the hardware watchdog is fed when
// watchdog.interval is unset.
const DefaultWatchdogInterval = 10 * time.Second

// WatchdogConfig names a hardware watchdog device (the Linux watchdog
// API: a write feeds it, "V" before close disarms it) that leafbox feeds
// while its liveness check passes, the one that gates the systemd
// watchdog pings; a wedged broker or store stops the feeding and the
// board resets when the device's timeout runs out.
type WatchdogConfig struct {
	// Device is the device file, such as /dev/watchdog.
	Device string `yaml:"device,omitempty"`
	// Interval is how often it is fed (default 10s); keep it well under
	// the device's timeout.
	Interval Duration `yaml:"interval,omitempty"`
}

// WatchdogInterval returns watchdog.interval, or its default.
func (w *WatchdogConfig) WatchdogInterval() time.Duration {
	if w == nil || w.Interval == 0 {
		return DefaultWatchdogInterval
	}
	return time.Duration(w.Interval)
}

func (v *validator) watchdog() {
	w := v.c.Watchdog
	if w == nil {
		return
	}
	if w.Device == "" {
		v.errf("watchdog.device", "missing (the watchdog device, such as /dev/watchdog)")
	}
	if w.Interval != 0 && time.Duration(w.Interval) < 10*time.Millisecond {
		v.errf("watchdog.interval", "%v is too short: at least 10ms", time.Duration(w.Interval))
	}
}
