package mqtt

import (
	"bytes"
	"strconv"
	"strings"

	"github.com/leafbox/leafbox/core/proto"
)

// The header fields that carry MQTT attributes across the bridge.
const (
	headerContentType   = "Mqtt-Content-Type"
	headerMessageExpiry = "Mqtt-Message-Expiry"
	headerRetain        = "Mqtt-Retain"
	headerMsgID         = "Nats-Msg-Id"
)

// property is one MQTT 5 user property.
type property struct{ key, value string }

// packet is an MQTT PUBLISH as the bridge handles it, for either
// library. Inbound, its slices are the library's and live as long as the
// handler.
type packet struct {
	topic    string
	payload  []byte
	qos      byte
	retain   bool
	dup      bool
	packetID uint16
	// MQTT 5 only.
	user          []property
	contentType   string
	expiry        *uint32
	responseTopic string
	correlation   []byte
}

// headerSafe reports whether s can be a NATS header name (name set:
// visible ASCII but ':') or value (no CR or LF).
func headerSafe(s string, name bool) bool {
	if !name {
		return !strings.ContainsAny(s, "\r\n")
	}
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

// appendHeader appends to dst the header block carrying p's attributes:
// its user properties, content type, expiry and retain flag, and
// msgID as Nats-Msg-Id when set. Properties a header cannot hold are
// left out.
func appendHeader(dst []byte, p *packet, msgID string) []byte {
	dst = append(dst, proto.HeaderVersion...)
	dst = append(dst, "\r\n"...)
	for _, u := range p.user {
		if headerSafe(u.key, true) && headerSafe(u.value, false) {
			dst = proto.AppendHeaderField(dst, u.key, u.value)
		}
	}
	if p.contentType != "" && headerSafe(p.contentType, false) {
		dst = proto.AppendHeaderField(dst, headerContentType, p.contentType)
	}
	if p.expiry != nil {
		dst = proto.AppendHeaderField(dst, headerMessageExpiry, strconv.FormatUint(uint64(*p.expiry), 10))
	}
	if p.retain {
		dst = proto.AppendHeaderField(dst, headerRetain, "true")
	}
	if msgID != "" {
		dst = proto.AppendHeaderField(dst, headerMsgID, msgID)
	}
	return append(dst, "\r\n"...)
}

// fromHeader fills p's MQTT 5 attributes from a NATS header block: the
// Mqtt-* fields become properties, every other field a user property.
// The strings are copies.
func fromHeader(p *packet, hdr []byte) {
	forEachField(hdr, func(name, value []byte) {
		switch {
		case proto.HeaderNameIs(name, headerContentType):
			p.contentType = string(value)
		case proto.HeaderNameIs(name, headerMessageExpiry):
			if n, err := strconv.ParseUint(string(value), 10, 32); err == nil {
				e := uint32(n)
				p.expiry = &e
			}
		case proto.HeaderNameIs(name, headerRetain):
			// Attributes of the inbound side; the route decides outbound.
		default:
			p.user = append(p.user, property{string(name), string(value)})
		}
	})
}

// forEachField calls f with the name and value (blanks around them
// trimmed) of each "Name: value" line of the header block hdr, after its
// status line. Lines without a colon are skipped.
func forEachField(hdr []byte, f func(name, value []byte)) {
	_, rest, more := bytes.Cut(hdr, []byte("\r\n"))
	for more && len(rest) > 0 {
		var line []byte
		line, rest, more = bytes.Cut(rest, []byte("\r\n"))
		if name, value, ok := bytes.Cut(line, []byte(":")); ok {
			if name = bytes.TrimSpace(name); len(name) > 0 {
				f(name, bytes.TrimSpace(value))
			}
		}
	}
}
