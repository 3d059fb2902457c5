package frame

import (
	"bytes"
	"encoding/json"
)

// DefaultMaxLine is a line framer's maximum line length when unset.
const DefaultMaxLine = 4096

// Lines is the newline-delimited text framer.
type Lines struct {
	// MaxLen is the longest line accepted, without its newline
	// (DefaultMaxLine when 0).
	MaxLen int
	// CRLF makes Encode end lines with CR LF instead of LF.
	CRLF bool
	// JSON requires every line to be one valid JSON value (JSON lines).
	JSON bool

	in buffer
	// discarding: a too-long line is being dropped up to its LF.
	discarding bool
	// scanned is how far pending() was searched for LF without one.
	scanned int
}

// NewLines returns a line framer.
func NewLines(maxLen int, crlf bool) *Lines { return &Lines{MaxLen: maxLen, CRLF: crlf} }

// NewJSONLines returns a JSON lines framer.
func NewJSONLines(maxLen int, crlf bool) *Lines {
	return &Lines{MaxLen: maxLen, CRLF: crlf, JSON: true}
}

func (l *Lines) maxLen() int {
	if l.MaxLen <= 0 {
		return DefaultMaxLine
	}
	return l.MaxLen
}

// Feed implements Framer.
func (l *Lines) Feed(b []byte) { l.in.feed(b) }

// Reset implements Framer.
func (l *Lines) Reset() { l.in.reset(); l.discarding, l.scanned = false, 0 }

// Next implements Framer.
func (l *Lines) Next() (Frame, bool, error) {
	for {
		line, ok, err := l.nextLine()
		if err != nil || !ok {
			return Frame{}, false, err
		}
		if len(line) == 0 {
			continue
		}
		if l.JSON && !json.Valid(line) {
			return Frame{}, false, badFrame(ErrInvalidJSON, len(line), "%.40q", line)
		}
		return Frame{Data: line}, true, nil
	}
}

// nextLine returns the next line without CR LF, or a too-long error.
func (l *Lines) nextLine() ([]byte, bool, error) {
	max := l.maxLen()
	for {
		p := l.in.pending()
		i := bytes.IndexByte(p[l.scanned:], '\n')
		if i < 0 {
			if l.discarding {
				l.in.consume(len(p))
				l.scanned = 0
				return nil, false, nil
			}
			l.scanned = len(p)
			// A line is too long once it has more than max bytes and
			// a CR (that may precede the LF) beyond them.
			if len(p) > max+1 || (len(p) == max+1 && p[max] != '\r') {
				l.in.consume(len(p))
				l.scanned = 0
				l.discarding = true
				return nil, false, badFrame(ErrTooLong, len(p), "line exceeds %d bytes", max)
			}
			return nil, false, nil
		}
		i += l.scanned
		l.scanned = 0
		line := p[:i]
		l.in.consume(i + 1)
		if l.discarding {
			l.discarding = false
			continue
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) > max {
			return nil, false, badFrame(ErrTooLong, len(line), "line exceeds %d bytes", max)
		}
		return line, true, nil
	}
}

// Encode implements Framer: msg must hold no newline (and, for JSON
// lines, be one valid JSON value).
func (l *Lines) Encode(dst, msg []byte) ([]byte, error) {
	if bytes.ContainsAny(msg, "\r\n") {
		return dst, badFrame(ErrMalformed, len(msg), "a line must not contain CR or LF")
	}
	if len(msg) > l.maxLen() {
		return dst, badFrame(ErrTooLong, len(msg), "line exceeds %d bytes", l.maxLen())
	}
	if l.JSON && !json.Valid(msg) {
		return dst, badFrame(ErrInvalidJSON, len(msg), "%.40q", msg)
	}
	dst = append(dst, msg...)
	if l.CRLF {
		dst = append(dst, '\r')
	}
	return append(dst, '\n'), nil
}
