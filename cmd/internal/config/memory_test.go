package config

import (
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

func TestMemoryLimit(t *testing.T) {
	limit, auto := mustValidate(t, "port: 4333\n").MemoryLimitSetting()
	require.Equal(t, auto, true, "unset is auto")
	require.Equal(t, limit, int64(0), "unset limit")
	limit, auto = mustValidate(t, "memory_limit: 256MiB\n").MemoryLimitSetting()
	require.Equal(t, auto, false, "set is not auto")
	require.Equal(t, limit, int64(256<<20), "limit")
	limit, auto = mustValidate(t, "memory_limit: 0\n").MemoryLimitSetting()
	require.Equal(t, auto, false, "0 is not auto")
	require.Equal(t, limit, int64(0), "0 is off")

	require.ErrorContains(t, validateErr(t, "memory_limit: 256\n"), "line 1: memory_limit: 256 is too small: at least 16MiB, or 0 to turn it off")
	require.ErrorContains(t, validateErr(t, "memory_limit: -1MiB\n"), "line 1: memory_limit: must not be negative")
}

func TestWatchdogConfig(t *testing.T) {
	c := mustValidate(t, "watchdog: {device: /dev/watchdog}\n")
	require.Equal(t, c.Watchdog.Device, "/dev/watchdog", "device")
	require.Equal(t, c.Watchdog.WatchdogInterval(), DefaultWatchdogInterval, "default interval")
	c = mustValidate(t, "watchdog: {device: /dev/watchdog, interval: 2s}\n")
	require.Equal(t, c.Watchdog.WatchdogInterval(), 2*time.Second, "interval")

	require.ErrorContains(t, validateErr(t, "watchdog: {interval: 2s}\n"), "line 1: watchdog.device: missing")
	require.ErrorContains(t, validateErr(t, "watchdog:\n  device: /dev/watchdog\n  interval: 1ms\n"), "line 3: watchdog.interval: 1ms is too short: at least 10ms")
}
