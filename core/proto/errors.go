package proto

import "errors"

// Parse errors. Parser.Next returns exactly one of these values (compare
// with == or errors.Is); ErrText gives the -ERR text a server sends for each
// before closing the connection.
var (
	// ErrUnknownOp means the bytes do not start a known operation, the
	// operation is not in the parser's OpSet, or a verb is not followed by
	// the separator it needs.
	ErrUnknownOp = errors.New("proto: unknown protocol operation")

	// ErrControlLineTooLong means a control line's arguments exceed
	// Limits.MaxControlLine. It is reported as soon as the limit is
	// passed, without waiting for the end of the line.
	ErrControlLineTooLong = errors.New("proto: maximum control line exceeded")

	// ErrMaxPayload means the size declared on a PUB, HPUB, MSG, HMSG or
	// LMSG control line exceeds Limits.MaxPayload. It is reported before
	// any of the body is read.
	ErrMaxPayload = errors.New("proto: maximum payload violation")

	// ErrBadArgs means the arguments of an operation are malformed: the
	// wrong number of them, a size that is not 1-9 decimal digits, a header
	// size larger than the total size, or a bad leaf reply marker.
	ErrBadArgs = errors.New("proto: malformed arguments")

	// ErrMissingCRLF means a message body is not followed by "\r\n".
	ErrMissingCRLF = errors.New("proto: message body not followed by CRLF")
)

// The -ERR texts nats-server sends; see ErrText.
const (
	textUnknownOp      = "Unknown Protocol Operation"
	textMaxControlLine = "maximum control line exceeded"
	textMaxPayload     = "Maximum Payload Violation"
)

// ErrText returns the text a server puts in -ERR '<text>' for a parse error
// before it closes the connection, or "" if err is not one of this package's
// errors.
//
// nats-server sends "Unknown Protocol Operation" for an unknown verb and a
// missing CRLF after a body. For malformed arguments (ErrBadArgs) it closes
// the connection without any -ERR; ErrText still returns "Unknown Protocol
// Operation" for it, so the peer learns why it is being closed. Clients
// react to that text by closing, exactly as they do to a silent close.
func ErrText(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrControlLineTooLong):
		return textMaxControlLine
	case errors.Is(err, ErrMaxPayload):
		return textMaxPayload
	case errors.Is(err, ErrUnknownOp), errors.Is(err, ErrBadArgs), errors.Is(err, ErrMissingCRLF):
		return textUnknownOp
	}
	return ""
}
