// Package frame splits the byte stream of a serial device into frames and
// encodes outbound messages as frames. It is pure: no goroutines, no I/O,
// no clock. A Framer is fed bytes (Feed) and then asked for frames (Next)
// until it has none complete; a bad frame is returned as an error (a
// *Error, whose Reason can be matched with errors.Is against the Err*
// values) and consumed, so the next call goes on with the bytes after it.
// A bad frame is never returned as a Frame.
//
// # Formats
//
//   - Lines: newline-delimited text. A frame ends at LF; a CR before it is
//     dropped; empty lines are skipped. A line longer than the maximum is
//     an ErrTooLong, and its bytes up to the next LF are discarded.
//   - JSONLines: lines that must each be one valid JSON value
//     (ErrInvalidJSON otherwise).
//   - NMEA: NMEA 0183 sentences ("$GPGGA,...*hh\r\n", or "!" for
//     encapsulated ones), at most 82 bytes by the standard (a larger
//     maximum may be set). The checksum (XOR of the bytes between the
//     start character and '*') is verified when present and required
//     unless AllowNoChecksum; a GGA or RMC sentence also yields a GPS fix
//     as JSON (Frame.Fix).
//   - LengthPrefixed: a 1, 2 or 4 byte unsigned length (big or little
//     endian), then that many payload bytes.
//   - Delimited: payload bytes ending at a delimiter byte; a delimiter or
//     escape byte inside the payload is sent as the escape byte followed
//     by the byte XOR 0x20 (the HDLC and PPP rule). Empty frames (two
//     delimiters in a row) are skipped, so frames may also start with a
//     delimiter.
//
// # Ownership
//
// Feed copies what it is given. A Frame's slices are the framer's: valid
// until the next Feed or Next call; copy what must be kept. Encode appends
// to the dst it is given and retains nothing.
package frame
