// Package clock tells leafbox what it knows about time on a gateway
// without a real-time clock: a boot id, a monotonic stamp, and whether the
// wall clock can be trusted yet.
//
// A gateway that boots without a battery-backed clock starts at 1970 (or
// at whatever the image was built with) until NTP or the hub says
// otherwise. Until then wall-clock times are meaningless, and anything
// that ages data by them (max_age) would either keep everything forever
// or, once the clock jumps forward by decades, wipe everything at once.
// This package gives callers a time they can rely on instead:
//
//   - Boot id: the kernel's /proc/sys/kernel/random/boot_id on Linux, a
//     random id per process elsewhere. Two stamps with the same boot id
//     share one monotonic time line.
//   - Monotonic stamp: the time since boot, CLOCK_BOOTTIME, which never
//     jumps and keeps counting through suspend. It is read once and then
//     followed with Go's monotonic clock (no system call per stamp);
//     Refresh reads it again, so after a suspend the stamp catches up
//     within one Refresh (it never goes backwards). Elsewhere it is the
//     time since the process started.
//   - Trust: the wall clock is trusted when a source vouches for it and
//     the vouched time is not earlier than the last known-good time.
//
// # Trust
//
// Two sources can vouch:
//
//   - "os": the kernel reports the clock synchronised (adjtimex: the
//     state is not TIME_ERROR, STA_UNSYNC is clear and the maximum error
//     is below 16 s). The trusted time is the wall clock.
//   - "hub": the caller passed a time read from the hub to
//     ObserveHubTime. The trusted time is that time plus the monotonic
//     time elapsed since, whatever the local wall clock says; Status
//     reports the local clock's offset from it.
//
// Either way, a vouched time earlier than the last known-good time is
// refused: a clock that went backwards below a time leafbox has already
// seen trusted is not trusted (the source is reported with Rejected set).
// "os" wins over "hub" when both vouch.
//
// # Last known-good time
//
// While trusted, the last known-good time follows the trusted time. It is
// kept in a state file (JSON, {"version":1,"last_known_good":"<RFC 3339>",
// "boot_id":"<id>"}), written atomically (temporary file, fsync, rename,
// fsync of the directory) by Save, which Run calls when the clock becomes
// trusted and every SaveInterval (10 minutes), and Close once more. A missing file starts from Config.Floor (DefaultFloor unless
// set), so a fresh gateway does not trust a clock set to 1970 either; an
// unreadable file is an error, never silently replaced.
//
// # Testing
//
// Every source (wall clock, monotonic clock, OS sync status, boot id) is
// a Config field, so tests run 1970 boots and clock jumps without
// touching the machine's clock.
package clock
