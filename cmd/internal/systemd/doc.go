// Package systemd speaks the service manager's notify protocol
// (sd_notify(3)) without a library: a Notifier sends newline-separated
// KEY=VALUE assignments, one datagram each, to the unixgram socket named
// by $NOTIFY_SOCKET (a path, or "@name" for the abstract namespace), and
// Watch pings the watchdog ($WATCHDOG_USEC) only while a health check
// passes.
//
// The contract:
//   - Open with NOTIFY_SOCKET unset returns a nil *Notifier, and every
//     method of a nil Notifier does nothing and returns nil: the caller
//     needs no "under systemd?" branches.
//   - Each Notify call is one datagram on a fresh socket, so a service
//     manager that re-executes itself (the socket path is kept, the peer
//     is new) still gets the next message.
//   - WatchdogInterval reads WATCHDOG_USEC and WATCHDOG_PID as
//     sd_watchdog_enabled(3) does: the watchdog is on when WATCHDOG_USEC
//     is a positive count of microseconds and WATCHDOG_PID is unset or the
//     calling process.
//   - Watch runs one check at a time, every half interval (the rate
//     systemd.service(5) recommends), and sends WATCHDOG=1 only when that
//     check returned nil within the half interval. A check that blocks (a
//     wedged broker) is not started again until it returns, and no ping is
//     sent meanwhile, so the service manager's timer runs out.
//
// The package reads no environment itself: Open and WatchdogInterval take
// a lookup function (os.LookupEnv in production).
package systemd
