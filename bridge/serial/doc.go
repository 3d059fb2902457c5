// Package serial is the serial-port bridge: frames read from a port
// (split by bridge/serial/frame) are published on a subject, and messages
// on a command subject are written to the port in the same framing.
//
// # Device side
//
// Run opens the port by path through go.bug.st/serial. A symlink (the
// stable /dev/serial/by-id/... names that udev makes) is resolved at each
// open, so a device that comes back under a new /dev/ttyUSBn is found
// again. Run returns an error when the device goes away: a read or write
// error, the zero-length read Linux gives for an unplugged USB adapter or
// a hung-up pseudo-terminal, or the configured path no longer existing
// (checked at every read timeout). The Runner then calls Run again after
// its backoff. Run reports StateConnected once the port is open, so the
// Status counts every open after the first as a reconnect. Bytes
// buffered from the old device are dropped at a reopen.
//
// # Delivery
//
// Inbound, each good frame is published on Subject (NMEA GPS fixes, as
// JSON, on FixSubject too): a core publish, or with Store a publish into
// the local stream that captures the subject, waiting for its PubAck
// (a serial device cannot be asked to resend, so a refusal is counted as
// a rejected drop and logged). A bad frame is counted (CountBadFrame) and
// logged at most once per LogInterval with the number suppressed; it is
// never published.
//
// Outbound, messages on CommandSubject are queued (at most QueueLen; a
// full queue drops with DropQueueFull) and written by one goroutine in
// arrival order, each encoded by the framer (a line gets its newline).
// A message that cannot be framed is dropped as rejected. A message with
// a reply subject is answered once written ({"ok":true}) or refused
// ({"error":"..."}). The subscription lives while Run runs; a command
// that arrives while the port is not open is dropped as not connected.
//
// With CommandStream, commands come instead from a durable consumer on a
// local stream (bridge.Consume): each is acknowledged only once written to
// the port, so what was stored while the device was away is written, in
// order, when it is back; one the framer refuses is terminated and
// counted as rejected.
//
// # Goroutines
//
// Run reads on its own goroutine; it starts a writer and a closer (which
// closes the port when Run's context ends, to unblock the read) and waits
// for both before it returns.
package serial
