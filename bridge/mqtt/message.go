package mqtt

import (
	"strconv"

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

// appendHeader appends to dst the header block carrying p's attributes:
// its user properties, content type, expiry and retain flag, and
// msgID as Nats-Msg-Id when set. Properties a header cannot hold are
// left out.
func appendHeader(dst []byte, p *packet, msgID string) []byte {
	dst = append(dst, proto.HeaderVersion...)
	dst = append(dst, "\r\n"...)
	for _, u := range p.user {
		if proto.ValidHeaderName(u.key) && proto.ValidHeaderValue(u.value) {
			dst = proto.AppendHeaderField(dst, u.key, u.value)
		}
	}
	if p.contentType != "" && proto.ValidHeaderValue(p.contentType) {
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
	proto.ForEachHeaderField(hdr, func(name, value []byte) {
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
