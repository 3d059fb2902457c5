package systemd

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/watchdog"
)

// The watchdog's environment variables.
const (
	WatchdogUsecEnv = "WATCHDOG_USEC" // the watchdog timeout in microseconds
	WatchdogPIDEnv  = "WATCHDOG_PID"  // the process the watchdog applies to
)

// WatchdogInterval returns the watchdog timeout the service manager set
// for process pid, or 0 when the watchdog is off: WATCHDOG_USEC unset, or
// WATCHDOG_PID naming another process. A value that is not a positive
// count is an error.
func WatchdogInterval(lookup func(string) (string, bool), pid int) (time.Duration, error) {
	usec, ok := lookup(WatchdogUsecEnv)
	if !ok || usec == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(usec, 10, 63)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("systemd: %s=%q is not a positive count of microseconds", WatchdogUsecEnv, usec)
	}
	if p, ok := lookup(WatchdogPIDEnv); ok && p != "" {
		owner, err := strconv.Atoi(p)
		if err != nil || owner <= 0 {
			return 0, fmt.Errorf("systemd: %s=%q is not a process id", WatchdogPIDEnv, p)
		}
		if owner != pid {
			return 0, nil // meant for another process
		}
	}
	return time.Duration(n) * time.Microsecond, nil
}

// Watch pings the watchdog while check passes, until ctx ends. Every
// timeout/2 it runs check (in a goroutine of its own, one at a time) and
// sends WatchdogPing if check returned nil within that half interval.
// onFail, if not nil, is called with check's error, or with
// context.DeadlineExceeded when check is still running, each time a ping
// is withheld. It returns when ctx ends; a check still running then is
// left to finish on its own.
func (n *Notifier) Watch(ctx context.Context, timeout time.Duration, check func() error, onFail func(error)) {
	if n == nil || timeout <= 0 {
		return
	}
	watchdog.Run(ctx, timeout/2, check, func() error { return n.Notify(WatchdogPing) }, onFail)
}
