package proto

import (
	"bytes"
	"strconv"
)

// Header block constants.
const (
	// HeaderVersion starts every header block's first line.
	HeaderVersion = "NATS/1.0"
	// HeaderLine is the first line of a header block without a status.
	HeaderLine = HeaderVersion + "\r\n"
	// EmptyHeader is a complete header block with no status and no fields.
	EmptyHeader = HeaderLine + "\r\n"
)

// HeaderValue returns the value of the first field named key in the header
// block hdr, or nil if there is none. Like nats-server (getHeader and
// sliceHeader in client.go) the name is compared byte for byte, case
// included; leading spaces of the value are skipped and the value runs to
// the end of its line. The status line is never matched. The result aliases
// hdr, with its capacity cut so that appending to it cannot overwrite hdr.
func HeaderValue(hdr []byte, key string) []byte {
	if len(key) == 0 {
		return nil
	}
	// Skip the status line; fields start after each CRLF.
	i := indexCRLF(hdr, 0)
	for i >= 0 {
		start := i + 2
		end := indexCRLF(hdr, start)
		lineEnd := end
		if lineEnd < 0 {
			lineEnd = len(hdr)
		}
		line := hdr[start:lineEnd]
		if len(line) > len(key) && line[len(key)] == ':' && string(line[:len(key)]) == key {
			v := start + len(key) + 1
			for v < lineEnd && hdr[v] == ' ' {
				v++
			}
			return hdr[v:lineEnd:lineEnd]
		}
		i = end
	}
	return nil
}

// AppendStatusHeader appends a header block that carries a status:
// "NATS/1.0 <code>[ <description>]\r\n", then one "<key>: <value>\r\n" line
// for each pair in kv, then the closing "\r\n". A final key without a value
// gets an empty value. The no-responders reply is
// AppendStatusHeader(dst, 503, "", "Nats-Subject", subject), whose length
// is 32+len(subject).
func AppendStatusHeader(dst []byte, code int, description string, kv ...string) []byte {
	dst = append(dst, HeaderVersion...)
	dst = append(dst, ' ')
	dst = strconv.AppendInt(dst, int64(code), 10)
	if description != "" {
		dst = append(dst, ' ')
		dst = append(dst, description...)
	}
	dst = append(dst, crlf...)
	for i := 0; i < len(kv); i += 2 {
		dst = append(dst, kv[i]...)
		dst = append(dst, ':', ' ')
		if i+1 < len(kv) {
			dst = append(dst, kv[i+1]...)
		}
		dst = append(dst, crlf...)
	}
	return append(dst, crlf...)
}

// ParseStatus returns the inline status of a header block, as clients read
// it: the three digits after "NATS/1.0 " on the first line, and the rest of
// that line with surrounding blanks removed as the description. It returns
// (0, nil) when hdr does not start with "NATS/1.0" or carries no valid
// status. desc aliases hdr.
func ParseStatus(hdr []byte) (code int, desc []byte) {
	end := indexCRLF(hdr, 0)
	if end < 0 {
		end = len(hdr)
	}
	line := hdr[:end]
	if len(line) < len(HeaderVersion) || string(line[:len(HeaderVersion)]) != HeaderVersion {
		return 0, nil
	}
	rest := trimBlanks(line[len(HeaderVersion):])
	if len(rest) < 3 {
		return 0, nil
	}
	for _, c := range rest[:3] {
		if c < '0' || c > '9' {
			return 0, nil
		}
		code = code*10 + int(c-'0')
	}
	if desc = trimBlanks(rest[3:]); len(desc) == 0 {
		desc = nil
	}
	return code, desc
}

// indexCRLF returns the index of the first "\r\n" in b at or after from, or
// -1.
func indexCRLF(b []byte, from int) int {
	if i := bytes.Index(b[from:], crlfBytes); i >= 0 {
		return from + i
	}
	return -1
}

var crlfBytes = []byte(crlf)

// trimBlanks removes leading and trailing spaces and tabs.
func trimBlanks(b []byte) []byte {
	for len(b) > 0 && isBlank(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isBlank(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
