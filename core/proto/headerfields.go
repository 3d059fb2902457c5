package proto

import (
	"bytes"
	"strings"
)

// ForEachHeaderField calls f with the name and value (blanks around them
// trimmed) of each "Name: value" field of the header block hdr, after its
// status line; lines without a colon are skipped. name and value alias
// hdr: f must copy what it keeps.
func ForEachHeaderField(hdr []byte, f func(name, value []byte)) {
	_, rest, more := bytes.Cut(hdr, crlfBytes)
	for more && len(rest) > 0 {
		var line []byte
		line, rest, more = bytes.Cut(rest, crlfBytes)
		if name, value, ok := bytes.Cut(line, []byte(":")); ok {
			if name = bytes.TrimSpace(name); len(name) > 0 {
				f(name, bytes.TrimSpace(value))
			}
		}
	}
}

// ValidHeaderName reports whether s can name a header field: not empty,
// visible ASCII other than ':'.
func ValidHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || c == ':' {
			return false
		}
	}
	return true
}

// ValidHeaderValue reports whether s can be a header field's value: no
// CR or LF, which would end the field.
func ValidHeaderValue(s string) bool {
	return !strings.ContainsAny(s, "\r\n")
}
