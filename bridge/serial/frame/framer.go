package frame

import (
	"errors"
	"fmt"
)

// Framer turns a device's byte stream into frames and messages into the
// device's framing. It is not safe for concurrent use.
type Framer interface {
	// Feed appends bytes read from the device.
	Feed(b []byte)
	// Next returns the next complete frame and true; false when more
	// bytes are needed. A bad frame is returned as a non-nil error (and
	// no frame); it is consumed.
	Next() (Frame, bool, error)
	// Encode appends msg as one frame (a newline, a length prefix, a
	// checksum) to dst; an error means msg cannot be sent in this
	// framing.
	Encode(dst, msg []byte) ([]byte, error)
	// Reset drops buffered bytes (after the device was reopened).
	Reset()
}

// Frame is one frame from the device.
type Frame struct {
	// Data is the frame's payload (a line without its newline, an NMEA
	// sentence without CR LF, a binary payload without prefix or
	// delimiter).
	Data []byte
	// Sentence is, for NMEA, the talker and sentence type ("GPGGA");
	// empty otherwise.
	Sentence string
	// Fix is, for an NMEA GGA or RMC sentence with a position, the GPS
	// fix as JSON; nil otherwise.
	Fix []byte
}

// The reasons of a bad frame.
var (
	// ErrTooLong: the frame exceeds the maximum length.
	ErrTooLong = errors.New("frame: too long")
	// ErrInvalidJSON: a JSON line is not valid JSON.
	ErrInvalidJSON = errors.New("frame: invalid JSON")
	// ErrChecksum: an NMEA checksum does not match.
	ErrChecksum = errors.New("frame: checksum mismatch")
	// ErrMalformed: the frame breaks its format's rules.
	ErrMalformed = errors.New("frame: malformed")
)

// Error is a bad frame: its reason, a description and the length of what
// was discarded.
type Error struct {
	// Reason is one of the Err* values.
	Reason error
	// Detail says what was wrong.
	Detail string
	// Len is the number of bytes discarded.
	Len int
}

func (e *Error) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%v (%d bytes)", e.Reason, e.Len)
	}
	return fmt.Sprintf("%v: %s (%d bytes)", e.Reason, e.Detail, e.Len)
}

// Unwrap returns the reason.
func (e *Error) Unwrap() error { return e.Reason }

func badFrame(reason error, n int, format string, args ...any) *Error {
	return &Error{Reason: reason, Detail: fmt.Sprintf(format, args...), Len: n}
}

// buffer holds fed bytes not yet framed: buf[start:].
type buffer struct {
	buf   []byte
	start int
}

func (b *buffer) feed(p []byte) {
	if b.start > 0 && b.start >= len(b.buf)/2 {
		n := copy(b.buf, b.buf[b.start:])
		b.buf = b.buf[:n]
		b.start = 0
	}
	b.buf = append(b.buf, p...)
}

func (b *buffer) pending() []byte { return b.buf[b.start:] }

func (b *buffer) consume(n int) { b.start += n }

func (b *buffer) reset() { b.buf, b.start = b.buf[:0], 0 }
