package proto

import "bytes"

// Header lookups and edits for the code that reads and rewrites messages
// (the uplink outbox, the downlinks, JetStream). None of them allocates
// unless it must return a new block, and then it allocates once.
//
// Case: nats-server looks header names up byte for byte (HeaderValue and
// HasHeader do the same), while nats.go canonicalises names as MIME does
// and so treats "nats-msg-id" as "Nats-Msg-Id". The Fold variants compare
// names ignoring ASCII case, with blanks around the name ignored, for the
// places where leafbox already reads headers that way (headers a
// publisher may have written in any case, such as Nats-Msg-Id). Non-ASCII
// letters are compared byte for byte.
//
// A header block is the status line ("NATS/1.0", maybe with a status),
// CRLF, then one "Name: value" line per field, each ending in CRLF, then
// an empty line (CRLF). The status line is never taken for a field.

// HasHeader reports whether the header block hdr has a field named key,
// compared byte for byte as HeaderValue does.
func HasHeader(hdr []byte, key string) bool { return HeaderValue(hdr, key) != nil }

// HeaderValueFold returns the value of the first field of hdr whose name,
// blanks around it ignored, equals key ignoring ASCII case, with the
// white space around the value removed, and whether there is one. The
// value aliases hdr (nil when it is empty).
func HeaderValueFold(hdr []byte, key string) (value []byte, ok bool) {
	_, rest, more := bytes.Cut(hdr, crlfBytes) // the status line
	for more && len(rest) > 0 {
		var line []byte
		line, rest, more = bytes.Cut(rest, crlfBytes)
		if name, v, found := bytes.Cut(line, colonBytes); found && HeaderNameIs(bytes.TrimSpace(name), key) {
			v = bytes.TrimSpace(v)
			return v[:len(v):len(v)], true
		}
	}
	return nil, false
}

// HasHeaderFold reports whether hdr has a field named key, ignoring ASCII
// case and blanks around the name, as HeaderValueFold compares.
func HasHeaderFold(hdr []byte, key string) bool {
	_, ok := HeaderValueFold(hdr, key)
	return ok
}

// HeaderNameIs reports whether the field name equals key, ignoring ASCII
// case.
func HeaderNameIs(name []byte, key string) bool {
	return len(name) == len(key) && HeaderNameHasPrefix(name, key)
}

// HeaderNameHasPrefix reports whether the field name starts with prefix,
// ignoring ASCII case.
func HeaderNameHasPrefix(name []byte, prefix string) bool {
	if len(name) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lowerASCII(name[i]) != lowerASCII(prefix[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// AppendHeaderField appends the field line "key: value\r\n" to dst, with
// each CR and LF of value turned into a space so that the value stays on
// its line. Fields built this way are added to a block with
// AppendHeaderFields.
func AppendHeaderField[V ~string | ~[]byte](dst []byte, key string, value V) []byte {
	dst = append(dst, key...)
	dst = append(dst, ':', ' ')
	n := len(dst)
	dst = append(dst, value...)
	for i := n; i < len(dst); i++ {
		if dst[i] == '\r' || dst[i] == '\n' {
			dst[i] = ' '
		}
	}
	return append(dst, crlf...)
}

// AppendHeader appends to dst the header block hdr with the field
// "key: value" added after its fields (see AppendHeaderFields).
func AppendHeader[V ~string | ~[]byte](dst, hdr []byte, key string, value V) []byte {
	dst = openBlock(dst, hdr, len(key)+2+len(value)+2)
	dst = AppendHeaderField(dst, key, value)
	return append(dst, crlf...)
}

// AppendHeaderFields appends to dst the header block hdr with fields (a
// run of lines, each ending in CRLF, as AppendHeaderField writes them)
// added after its fields. When hdr is empty, or is not a complete block
// (it does not end in an empty line), a new block "NATS/1.0\r\n" + fields
// + "\r\n" is written instead. hdr is only read, and must not overlap
// dst's spare capacity; dst grows at most once, so with nil dst the result
// is one allocation and with room in dst none.
func AppendHeaderFields(dst, hdr, fields []byte) []byte {
	dst = openBlock(dst, hdr, len(fields))
	dst = append(dst, fields...)
	return append(dst, crlf...)
}

// openBlock appends to dst hdr without its closing empty line, or a new
// status line when hdr is no complete block, with room for extra more
// bytes and the closing line.
func openBlock(dst, hdr []byte, extra int) []byte {
	if len(hdr) == 0 || !bytes.HasSuffix(hdr, emptyLineEnd) {
		dst = grow(dst, len(HeaderLine)+extra+len(crlf))
		return append(dst, HeaderLine...)
	}
	dst = grow(dst, len(hdr)+extra)
	return append(dst, hdr[:len(hdr)-len(crlf)]...)
}

// grow returns dst with room for n more bytes, in one allocation when it
// has not (slices.Grow takes two under the race detector).
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst
	}
	out := make([]byte, len(dst), len(dst)+n)
	copy(out, dst)
	return out
}

// DeleteHeaders returns hdr without the fields whose name (blanks around
// it removed) drop selects. It returns hdr itself, without allocating,
// when drop selects none; else a new block in one allocation, or nil when
// no line is left under a bare "NATS/1.0" status line. Lines without a
// colon are kept. drop must not retain name, which aliases hdr.
func DeleteHeaders(hdr []byte, drop func(name []byte) bool) []byte {
	status, fields, ok := bytes.Cut(bytes.TrimSuffix(hdr, emptyLineEnd), crlfBytes)
	if !ok {
		return hdr // no field
	}
	first := -1 // the offset in fields of the first dropped line
	for off, rest := 0, fields; first < 0; {
		line, next, more := bytes.Cut(rest, crlfBytes)
		if dropped(line, drop) {
			first = off
		}
		if !more {
			break
		}
		off += len(line) + len(crlf)
		rest = next
	}
	if first < 0 {
		return hdr
	}
	out := make([]byte, 0, len(status)+len(fields)+2*len(emptyLineEnd))
	out = append(out, status...)
	out = append(out, crlf...)
	out = append(out, fields[:first]...) // kept lines, each with its CRLF
	kept := first > 0
	for rest, more := fields[first:], true; more; {
		var line []byte
		line, rest, more = bytes.Cut(rest, crlfBytes)
		if dropped(line, drop) {
			continue
		}
		out = append(out, line...)
		out = append(out, crlf...)
		kept = true
	}
	if !kept && string(status) == HeaderVersion {
		return nil
	}
	return append(out, crlf...)
}

// dropped reports whether drop selects the field line.
func dropped(line []byte, drop func(name []byte) bool) bool {
	name, _, ok := bytes.Cut(line, colonBytes)
	return ok && drop(bytes.TrimSpace(name))
}

var (
	colonBytes   = []byte(":")
	emptyLineEnd = []byte("\r\n\r\n")
)
