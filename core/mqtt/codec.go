package mqtt

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/eclipse/paho.golang/packets"
)

// Protocol levels (the CONNECT packet's "Protocol Level" byte).
const (
	version311 byte = 4
	version5   byte = 5
)

// Reason codes this package sends (MQTT 5 §2.4; the 3.1.1 CONNACK codes
// are converted by connackCode311).
const (
	codeSuccess               byte = 0x00
	codeGrantedQoS1           byte = 0x01
	codeGrantedQoS2           byte = 0x02
	codeNoMatchingSubscribers byte = 0x10
	codeNoSubscriptionExisted byte = 0x11
	codeUnspecified           byte = 0x80
	codeMalformed             byte = 0x81
	codeProtocolError         byte = 0x82
	codeImplementationError   byte = 0x83
	codeUnsupportedVersion    byte = 0x84
	codeClientIDInvalid       byte = 0x85
	codeBadUserOrPassword     byte = 0x86
	codeNotAuthorized         byte = 0x87
	codeServerBusy            byte = 0x89
	codeBadAuthMethod         byte = 0x8C
	codeServerShuttingDown    byte = 0x8B
	codeKeepAliveTimeout      byte = 0x8D
	codeSessionTakenOver      byte = 0x8E
	codeTopicFilterInvalid    byte = 0x8F
	codeTopicNameInvalid      byte = 0x90
	codePacketIDInUse         byte = 0x91
	codePacketIDNotFound      byte = 0x92
	codeReceiveMaxExceeded    byte = 0x93
	codeTopicAliasInvalid     byte = 0x94
	codePacketTooLarge        byte = 0x95
	codeQuotaExceeded         byte = 0x97
	codeQoSNotSupported       byte = 0x9B
	codeSharedSubUnsupported  byte = 0x9E
	codeSubIDUnsupported      byte = 0xA1
	codeWildcardUnsupported   byte = 0xA2
	codeDisconnectWithWill    byte = 0x04
)

// ProtocolError is a violation of the MQTT specification by a client. Code
// is the MQTT 5 reason code the server answers it with (a DISCONNECT, or a
// CONNACK before the connection is accepted); an MQTT 3.1.1 connection is
// closed instead.
type ProtocolError struct {
	Code   byte
	Reason string
}

func (e *ProtocolError) Error() string { return "mqtt: " + e.Reason }

func malformed(format string, args ...any) error {
	return &ProtocolError{Code: codeMalformed, Reason: "malformed packet: " + fmt.Sprintf(format, args...)}
}

func protocolErr(format string, args ...any) error {
	return &ProtocolError{Code: codeProtocolError, Reason: "protocol error: " + fmt.Sprintf(format, args...)}
}

// splitPacket returns the first complete control packet of b: its fixed
// header's first byte and its body (a sub-slice of b), and the number of
// bytes it takes. n is 0 when b does not hold a whole packet yet. A packet
// longer than maxSize (0: unlimited) is refused with a ProtocolError of
// code 0x95 as soon as its length is known, before its body arrives.
func splitPacket(b []byte, maxSize int) (header byte, body []byte, n int, err error) {
	if len(b) < 2 {
		return 0, nil, 0, nil
	}
	length, shift, i := 0, 0, 1
	for {
		if i == len(b) {
			return 0, nil, 0, nil
		}
		if i > 4 {
			// [MQTT-1.5.5-1] (v5) / §2.2.3 (3.1.1): at most four bytes.
			return 0, nil, 0, malformed("remaining length longer than four bytes")
		}
		c := b[i]
		length |= int(c&0x7f) << shift
		shift += 7
		i++
		if c&0x80 == 0 {
			break
		}
	}
	total := i + length
	if maxSize > 0 && total > maxSize {
		return 0, nil, 0, &ProtocolError{Code: codePacketTooLarge, Reason: fmt.Sprintf("packet of %d bytes exceeds the maximum of %d", total, maxSize)}
	}
	if len(b) < total {
		return 0, nil, 0, nil
	}
	return b[0], b[i:total:total], total, nil
}

// checkFlags enforces the fixed header's reserved flag bits.
func checkFlags(header byte) error {
	typ, flags := header>>4, header&0x0f
	switch typ {
	case packets.PUBLISH:
		// [MQTT-3.3.1-4]: QoS 3 is malformed.
		if flags&0x06 == 0x06 {
			return malformed("PUBLISH with QoS 3")
		}
		return nil
	case packets.PUBREL, packets.SUBSCRIBE, packets.UNSUBSCRIBE:
		// [MQTT-3.6.1-1], [MQTT-3.8.1-1], [MQTT-3.10.1-1]: flags 0010.
		if flags != 0x02 {
			return malformed("packet type %d with flags %04b, want 0010", typ, flags)
		}
		return nil
	case packets.CONNECT, packets.PUBACK, packets.PUBREC, packets.PUBCOMP, packets.PINGREQ, packets.DISCONNECT, packets.AUTH:
		// [MQTT-2.2.2-1] (3.1.1) / [MQTT-2.1.3-1] (v5): reserved flags are 0.
		if flags != 0 {
			return malformed("packet type %d with reserved flags %04b", typ, flags)
		}
		return nil
	}
	// CONNACK, SUBACK, UNSUBACK, PINGRESP go from server to client only,
	// and type 0 is reserved [MQTT-2.1.2].
	return protocolErr("packet type %d is not sent by clients", typ)
}

// decodePacket decodes the body of a packet from a client speaking
// version (0 before its CONNECT). The packet's slices are its own (copies
// of body's bytes); body may be reused after it returns.
func decodePacket(header byte, body []byte, version byte) (packets.Packet, error) {
	if err := checkFlags(header); err != nil {
		return nil, err
	}
	typ := header >> 4
	if version == 0 {
		if typ != packets.CONNECT {
			// [MQTT-3.1.0-1]: the first packet must be CONNECT.
			return nil, protocolErr("first packet is type %d, not CONNECT", typ)
		}
		return decodeConnect(body)
	}
	if typ == packets.CONNECT {
		// [MQTT-3.1.0-2]: a second CONNECT is a protocol violation.
		return nil, protocolErr("second CONNECT")
	}
	if version == version311 {
		return decode311(header, body)
	}
	return decode5(header, body)
}

// decode5 decodes an MQTT 5 packet with paho.golang's codec.
func decode5(header byte, body []byte) (packets.Packet, error) {
	var p packets.Packet
	switch header >> 4 {
	case packets.PUBLISH:
		p = &packets.Publish{
			Properties: &packets.Properties{},
			QoS:        (header >> 1) & 3,
			Duplicate:  header&0x08 != 0,
			Retain:     header&0x01 != 0,
		}
	case packets.PUBACK:
		p = &packets.Puback{Properties: &packets.Properties{}}
	case packets.PUBREC:
		p = &packets.Pubrec{Properties: &packets.Properties{}}
	case packets.PUBREL:
		p = &packets.Pubrel{Properties: &packets.Properties{}}
	case packets.PUBCOMP:
		p = &packets.Pubcomp{Properties: &packets.Properties{}}
	case packets.SUBSCRIBE:
		p = &packets.Subscribe{Properties: &packets.Properties{}}
	case packets.UNSUBSCRIBE:
		p = &packets.Unsubscribe{Properties: &packets.Properties{}}
	case packets.PINGREQ:
		if len(body) != 0 {
			return nil, malformed("PINGREQ with a body")
		}
		return &packets.Pingreq{}, nil
	case packets.DISCONNECT:
		p = &packets.Disconnect{Properties: &packets.Properties{}}
	case packets.AUTH:
		// Enhanced authentication is not offered (no Authentication
		// Method is accepted in CONNECT), so AUTH is a protocol error
		// [MQTT-4.12.0-1].
		return nil, protocolErr("AUTH without an authentication method")
	}
	if err := unpack5(p, body); err != nil {
		return nil, err
	}
	return p, check5(p, body)
}

// unpack5 runs paho's decoder, turning its panics on short input (it
// reads some fields unchecked) and its errors into malformed-packet
// errors.
func unpack5(p packets.Packet, body []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = malformed("%T: %v", p, r)
		}
	}()
	buf := bytes.NewBuffer(body)
	if err := p.Unpack(buf); err != nil {
		return malformed("%T: %v", p, err)
	}
	return nil
}

// check5 adds the checks paho's decoder leaves out.
func check5(p packets.Packet, body []byte) error {
	switch p := p.(type) {
	case *packets.Publish:
		// [MQTT-2.2.1-3]: QoS > 0 needs a non-zero packet id.
		if p.QoS > 0 && p.PacketID == 0 {
			return malformed("PUBLISH QoS %d with packet id 0", p.QoS)
		}
		if !utf8.ValidString(p.Topic) {
			// [MQTT-1.5.4-1]
			return malformed("topic is not valid UTF-8")
		}
		if pf := p.Properties.PayloadFormat; pf != nil && *pf > 1 {
			return protocolErr("payload format indicator %d", *pf)
		}
	case *packets.Subscribe:
		if p.PacketID == 0 {
			return malformed("SUBSCRIBE with packet id 0")
		}
		if len(p.Subscriptions) == 0 {
			// [MQTT-3.8.3-2]
			return protocolErr("SUBSCRIBE without a topic filter")
		}
		// The options byte's reserved bits must be 0 [MQTT-3.8.3-5], and
		// retain handling 3 and QoS 3 are malformed: paho drops those
		// bits, so look at the raw bytes once more.
		if err := checkSubOptions5(body); err != nil {
			return err
		}
	case *packets.Unsubscribe:
		if p.PacketID == 0 {
			return malformed("UNSUBSCRIBE with packet id 0")
		}
		if len(p.Topics) == 0 {
			// [MQTT-3.10.3-2]
			return protocolErr("UNSUBSCRIBE without a topic filter")
		}
	case *packets.Puback:
		if p.PacketID == 0 {
			return malformed("PUBACK with packet id 0")
		}
	case *packets.Pubrec:
		if p.PacketID == 0 {
			return malformed("PUBREC with packet id 0")
		}
	case *packets.Pubrel:
		if p.PacketID == 0 {
			return malformed("PUBREL with packet id 0")
		}
	case *packets.Pubcomp:
		if p.PacketID == 0 {
			return malformed("PUBCOMP with packet id 0")
		}
	}
	return nil
}

// checkSubOptions5 walks the filters of an MQTT 5 SUBSCRIBE body and
// checks each subscription options byte (§3.8.3.1).
func checkSubOptions5(body []byte) error {
	i := 2
	plen, n := uvarint(body[i:])
	if n <= 0 {
		return malformed("SUBSCRIBE properties length")
	}
	i += n + plen
	for i < len(body) {
		if i+2 > len(body) {
			return malformed("SUBSCRIBE filter length")
		}
		l := int(binary.BigEndian.Uint16(body[i:]))
		i += 2 + l
		if i >= len(body) {
			return malformed("SUBSCRIBE options missing")
		}
		o := body[i]
		i++
		switch {
		case o&0xc0 != 0:
			return malformed("SUBSCRIBE options reserved bits set")
		case o&0x03 == 3:
			return malformed("SUBSCRIBE with QoS 3")
		case (o>>4)&0x03 == 3:
			return protocolErr("SUBSCRIBE with retain handling 3")
		}
	}
	return nil
}

// uvarint decodes an MQTT variable byte integer; n is 0 when b ends
// first and -1 when it is longer than four bytes.
func uvarint(b []byte) (v, n int) {
	shift := 0
	for i := 0; i < len(b); i++ {
		if i == 4 {
			return 0, -1
		}
		v |= int(b[i]&0x7f) << shift
		shift += 7
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// decodeConnect decodes a CONNECT of either version: its protocol level
// chooses the codec.
func decodeConnect(body []byte) (*packets.Connect, error) {
	if len(body) < 2 {
		return nil, malformed("CONNECT too short")
	}
	nameLen := int(binary.BigEndian.Uint16(body))
	if len(body) < 2+nameLen+4 {
		return nil, malformed("CONNECT too short")
	}
	name, level, flags := string(body[2:2+nameLen]), body[2+nameLen], body[3+nameLen]
	if flags&0x01 != 0 {
		// [MQTT-3.1.2-3]: the reserved flag must be 0.
		return nil, malformed("CONNECT reserved flag set")
	}
	switch {
	case name == "MQTT" && level == version5:
		c := &packets.Connect{Properties: &packets.Properties{}}
		if err := unpack5(c, body); err != nil {
			return nil, err
		}
		return c, checkConnect(c)
	case name == "MQTT" && level == version311:
		c, err := decodeConnect311(body[4+nameLen:], flags)
		if err != nil {
			return nil, err
		}
		c.ProtocolName, c.ProtocolVersion = name, level
		return c, checkConnect(c)
	case name == "MQTT" || name == "MQIsdp":
		// [MQTT-3.1.2-2]: an unsupported level is answered with CONNACK
		// 0x01 (3.1.1) or 0x84 (v5), then the connection is closed.
		return nil, &ProtocolError{Code: codeUnsupportedVersion, Reason: fmt.Sprintf("protocol level %d is not supported", level)}
	}
	// [MQTT-3.1.2-1]: another protocol name: close without CONNACK.
	return nil, protocolErr("protocol name %q", name)
}

// checkConnect applies the CONNECT flag rules of both versions.
func checkConnect(c *packets.Connect) error {
	if !c.WillFlag && (c.WillQOS != 0 || c.WillRetain) {
		// [MQTT-3.1.2-11], [MQTT-3.1.2-13], [MQTT-3.1.2-15]
		return malformed("will QoS or retain set without the will flag")
	}
	if c.WillQOS == 3 {
		// [MQTT-3.1.2-14]
		return malformed("will QoS 3")
	}
	if c.ProtocolVersion == version311 && c.PasswordFlag && !c.UsernameFlag {
		// [MQTT-3.1.2-22]
		return malformed("password without a user name")
	}
	if !utf8.ValidString(c.ClientID) || !utf8.ValidString(c.Username) || (c.WillFlag && !utf8.ValidString(c.WillTopic)) {
		// [MQTT-1.5.3-1]
		return malformed("string is not valid UTF-8")
	}
	if c.ProtocolVersion == version5 && c.Properties.AuthMethod != "" {
		return &ProtocolError{Code: codeBadAuthMethod, Reason: "authentication method " + c.Properties.AuthMethod + " is not supported"}
	}
	return nil
}

// appendPacket appends the encoding of p for a client speaking version.
func appendPacket(dst []byte, p packets.Packet, version byte) []byte {
	if version == version311 {
		return append311(dst, p)
	}
	var typ, flags byte
	switch p := p.(type) {
	case *packets.Connack:
		typ = packets.CONNACK
	case *packets.Publish:
		typ = packets.PUBLISH
		flags = p.QoS << 1
		if p.Duplicate {
			flags |= 0x08
		}
		if p.Retain {
			flags |= 0x01
		}
	case *packets.Puback:
		typ = packets.PUBACK
	case *packets.Pubrec:
		typ = packets.PUBREC
	case *packets.Pubrel:
		typ, flags = packets.PUBREL, 0x02
	case *packets.Pubcomp:
		typ = packets.PUBCOMP
	case *packets.Suback:
		typ = packets.SUBACK
	case *packets.Unsuback:
		typ = packets.UNSUBACK
	case *packets.Pingresp:
		return append(dst, packets.PINGRESP<<4, 0)
	case *packets.Disconnect:
		typ = packets.DISCONNECT
	default:
		panic(fmt.Sprintf("mqtt: cannot encode %T", p))
	}
	bufs := p.Buffers()
	n := 0
	for _, b := range bufs {
		n += len(b)
	}
	dst = append(dst, typ<<4|flags)
	dst = appendVarint(dst, n)
	for _, b := range bufs {
		dst = append(dst, b...)
	}
	return dst
}

// appendVarint appends v as an MQTT variable byte integer.
func appendVarint(dst []byte, v int) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v > 0 {
			c |= 0x80
		}
		dst = append(dst, c)
		if v == 0 {
			return dst
		}
	}
}
