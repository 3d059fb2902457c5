// Package modbus is the Modbus bridge: it polls the registers of Modbus
// RTU (serial) and Modbus TCP devices and publishes their values, and it
// turns write requests from NATS into Modbus writes. The protocol is
// github.com/simonvetter/modbus's client (CRC-16 and MBAP framing,
// exception decoding); this package adds the register maps, the value
// codec, the schedule and the bridge.
//
// # One bus, many devices
//
// A Bridge is one bus: an RTU serial line (its path resolved through
// symlinks such as /dev/serial/by-id/... at each open) or one TCP
// connection. Its devices (unit ids) are polled in turn by one goroutine,
// each at its own interval; writes are served between polls. Requests
// are never concurrent, as Modbus requires.
//
// # Polling
//
// A device's registers with a subject are grouped into as few reads as
// the protocol allows (function 01 coils, 02 discrete inputs, 03 holding
// and 04 input registers; contiguous or overlapping addresses of one
// table, at most 2000 bits or 125 registers per read). Each value is
// decoded by its type (bool, uint16, int16, uint32, int32, float32; a
// 32-bit value's two registers high word first by default, or low word
// first), scaled (value = raw*scale + offset) and published when it
// differs from the last published value by more than its deadband (any
// change for deadband 0); the first poll publishes every value. The
// payload is JSON, {"value":21.5,"raw":215,"ts":"2026-12-01T10:00:00.000Z"},
// or with Plain the value alone as text. With Store each value is
// published into the local stream that captures its subject, waiting for
// the PubAck.
//
// A device's polls are due on a fixed grid, one slot every interval, so
// the schedule does not drift: the next poll is due one interval after the
// last was due. A poll that overran past the next slot skips to the first
// slot at or after its end, and the slots passed over are counted
// (DeviceSnapshot.MissedPolls, missed_polls in /bridgez), so one slow poll
// costs slots, not the grid.
//
// # Errors
//
// A Modbus exception (illegal data address, device busy, ...) is counted
// for its device (DeviceSnapshot.Exceptions, LastException) and in the
// bridge's last error; the poll goes on with the next block. A bad frame
// (CRC, length, transaction or unit id) counts as a bad frame; a request
// unanswered within Timeout as a timeout; each is logged, at most one
// warning per 10 seconds with the number held back. Run returns, for the Runner to
// reopen the bus with backoff, when the bus itself fails (a TCP
// connection closed, a serial read error), when an RTU line's path is
// gone, or after maxTimeouts unanswered requests in a row.
//
// # Writes
//
// A device with a command subject takes write requests: JSON
// {"register":"setpoint","value":21.5}. A holding register is written
// with function 06 (16 for a 32-bit value or an array of values from its
// address), a coil with 05 (15 for an array), after undoing scale and
// offset and checking the type's range. The reply is {"ok":true,
// "function":6}, or {"error":..., "exception":"illegal data value"}
// when the device refused it. A written device is polled again at once.
//
// With CommandStream and CommandDurable a device takes its write requests
// from a durable consumer on a local stream (bridge.Consume) instead, one
// at a time: each is acknowledged once the device accepted the write, and
// only then counted out; an exception retrying cannot cure, or a request
// that is not one, terminates it (a rejected drop); "server device busy"
// or "acknowledge" naks it with a delay, and a write lost with the bus
// is nak'ed at once, so it comes again in order.
//
// # Ownership
//
// A device's last values belong to the poll loop; its counters are
// atomics and a mutex-guarded error, read by Devices. Write requests are
// copied out of the bus's handler into a bounded queue.
package modbus
