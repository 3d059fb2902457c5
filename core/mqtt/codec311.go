package mqtt

import (
	"encoding/binary"
	"unsafe"

	"github.com/eclipse/paho.golang/packets"
)

// MQTT 3.1.1 codec. paho.golang's packets decode MQTT 5 only: their
// bodies always carry a properties length, which 3.1.1 packets do not
// have. This file decodes 3.1.1 client packets into the same paho types
// (with empty Properties) and encodes server packets from them, so the
// session logic sees one set of types. Section numbers are those of the
// MQTT 3.1.1 OASIS standard.

// reader311 reads the fields of a packet body, remembering the first
// error.
type reader311 struct {
	b   []byte
	err error
}

func (r *reader311) uint16() uint16 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 2 {
		r.err = malformed("packet too short")
		return 0
	}
	v := binary.BigEndian.Uint16(r.b)
	r.b = r.b[2:]
	return v
}

// binary reads a length-prefixed field (§1.5.3 strings share the form);
// the result is a copy.
func (r *reader311) binary() []byte {
	n := int(r.uint16())
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.err = malformed("field of %d bytes, %d left", n, len(r.b))
		return nil
	}
	v := append([]byte{}, r.b[:n]...)
	r.b = r.b[n:]
	return v
}

func (r *reader311) string() string { return string(r.binary()) }

func (r *reader311) byte() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 1 {
		r.err = malformed("packet too short")
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// appendPublish311 appends a 3.1.1 PUBLISH with fixed header byte h
// (its QoS says whether pid is written).
func appendPublish311(dst []byte, h byte, topic string, pid uint16, payload []byte) []byte {
	qos := (h >> 1) & 3
	n := 2 + len(topic) + len(payload)
	if qos > 0 {
		n += 2
	}
	dst = append(dst, h)
	dst = appendVarint(dst, n)
	dst = append(dst, byte(len(topic)>>8), byte(len(topic)))
	dst = append(dst, topic...)
	if qos > 0 {
		dst = append(dst, byte(pid>>8), byte(pid))
	}
	return append(dst, payload...)
}

// decodePublish311 decodes a 3.1.1 PUBLISH (header checked) into p,
// reusing p and its Properties: its Topic and Payload are views of body,
// valid only until the reader's buffer is reused, so what keeps them
// copies them (conn.route). It allocates nothing.
func decodePublish311(p *packets.Publish, header byte, body []byte) error {
	props := p.Properties
	if props == nil {
		props = &packets.Properties{}
	} else {
		*props = packets.Properties{}
	}
	*p = packets.Publish{Properties: props, QoS: (header >> 1) & 3, Duplicate: header&0x08 != 0, Retain: header&0x01 != 0}
	r := reader311{b: body}
	n := int(r.uint16())
	if r.err != nil {
		return r.err
	}
	if len(r.b) < n {
		return malformed("field of %d bytes, %d left", n, len(r.b))
	}
	if n > 0 {
		p.Topic = unsafe.String(&r.b[0], n)
	}
	r.b = r.b[n:]
	if p.QoS > 0 {
		id := r.uint16()
		switch {
		case r.err != nil:
			return r.err
		case id == 0:
			// §2.3.1: a packet identifier is non-zero.
			return malformed("PUBLISH with packet id 0")
		}
		p.PacketID = id
	}
	p.Payload = r.b
	if p.Payload == nil {
		p.Payload = []byte{}
	}
	return nil
}

// decodeConnect311 decodes a 3.1.1 CONNECT from its keep alive field on
// (§3.1.2.10), given the connect flags.
func decodeConnect311(b []byte, flags byte) (*packets.Connect, error) {
	r := &reader311{b: b}
	c := &packets.Connect{Properties: &packets.Properties{}}
	c.UnpackFlags(flags)
	c.KeepAlive = r.uint16()
	// §3.1.3: client id, then will topic and message, user name,
	// password, each present when its flag is set.
	c.ClientID = r.string()
	if c.WillFlag {
		c.WillProperties = &packets.Properties{}
		c.WillTopic = r.string()
		c.WillMessage = r.binary()
	}
	if c.UsernameFlag {
		c.Username = r.string()
	}
	if c.PasswordFlag {
		c.Password = r.binary()
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, malformed("CONNECT has %d bytes after its payload", len(r.b))
	}
	return c, nil
}

// decode311 decodes a 3.1.1 packet other than CONNECT.
func decode311(header byte, body []byte) (packets.Packet, error) {
	r := &reader311{b: body}
	pid := func(what string) (uint16, error) {
		id := r.uint16()
		switch {
		case r.err != nil:
			return 0, r.err
		case id == 0:
			// §2.3.1: a packet identifier is non-zero.
			return 0, malformed("%s with packet id 0", what)
		}
		return id, nil
	}
	ack := func(what string) (uint16, error) {
		// §3.4.1 and after: remaining length is exactly 2.
		if len(body) != 2 {
			return 0, malformed("%s of %d bytes, want 2", what, len(body))
		}
		return pid(what)
	}
	switch header >> 4 {
	case packets.PUBLISH:
		p := &packets.Publish{
			Properties: &packets.Properties{},
			QoS:        (header >> 1) & 3,
			Duplicate:  header&0x08 != 0,
			Retain:     header&0x01 != 0,
		}
		p.Topic = r.string()
		if p.QoS > 0 {
			id, err := pid("PUBLISH")
			if err != nil {
				return nil, err
			}
			p.PacketID = id
		}
		if r.err != nil {
			return nil, r.err
		}
		p.Payload = append([]byte{}, r.b...)
		return p, nil
	case packets.PUBACK:
		id, err := ack("PUBACK")
		return &packets.Puback{Properties: &packets.Properties{}, PacketID: id}, err
	case packets.PUBREC:
		id, err := ack("PUBREC")
		return &packets.Pubrec{Properties: &packets.Properties{}, PacketID: id}, err
	case packets.PUBREL:
		id, err := ack("PUBREL")
		return &packets.Pubrel{Properties: &packets.Properties{}, PacketID: id}, err
	case packets.PUBCOMP:
		id, err := ack("PUBCOMP")
		return &packets.Pubcomp{Properties: &packets.Properties{}, PacketID: id}, err
	case packets.SUBSCRIBE:
		id, err := pid("SUBSCRIBE")
		if err != nil {
			return nil, err
		}
		s := &packets.Subscribe{Properties: &packets.Properties{}, PacketID: id}
		for len(r.b) > 0 && r.err == nil {
			f := r.string()
			o := r.byte()
			if o&0xfc != 0 {
				// [MQTT-3-8.3-4]: the upper six bits are reserved.
				return nil, malformed("SUBSCRIBE requested QoS byte %#x", o)
			}
			if o == 3 {
				return nil, malformed("SUBSCRIBE with QoS 3")
			}
			s.Subscriptions = append(s.Subscriptions, packets.SubOptions{Topic: f, QoS: o})
		}
		if r.err != nil {
			return nil, r.err
		}
		if len(s.Subscriptions) == 0 {
			// [MQTT-3.8.3-3]
			return nil, protocolErr("SUBSCRIBE without a topic filter")
		}
		return s, nil
	case packets.UNSUBSCRIBE:
		id, err := pid("UNSUBSCRIBE")
		if err != nil {
			return nil, err
		}
		u := &packets.Unsubscribe{Properties: &packets.Properties{}, PacketID: id}
		for len(r.b) > 0 && r.err == nil {
			u.Topics = append(u.Topics, r.string())
		}
		if r.err != nil {
			return nil, r.err
		}
		if len(u.Topics) == 0 {
			// [MQTT-3.10.3-2]
			return nil, protocolErr("UNSUBSCRIBE without a topic filter")
		}
		return u, nil
	case packets.PINGREQ:
		if len(body) != 0 {
			return nil, malformed("PINGREQ with a body")
		}
		return &packets.Pingreq{}, nil
	case packets.DISCONNECT:
		if len(body) != 0 {
			return nil, malformed("DISCONNECT with a body")
		}
		return &packets.Disconnect{Properties: &packets.Properties{}}, nil
	}
	// AUTH (type 15) is reserved in 3.1.1 (§2.2.1).
	return nil, protocolErr("packet type %d is reserved in MQTT 3.1.1", header>>4)
}

// connackCode311 converts an MQTT 5 CONNACK reason code to the 3.1.1
// return code (§3.2.2.3).
func connackCode311(code byte) byte {
	switch code {
	case codeSuccess:
		return 0
	case codeUnsupportedVersion:
		return 1 // unacceptable protocol version
	case codeClientIDInvalid:
		return 2 // identifier rejected
	case codeServerBusy, codeServerShuttingDown, codeUnspecified, codeQuotaExceeded:
		return 3 // server unavailable
	case codeBadUserOrPassword:
		return 4 // bad user name or password
	}
	return 5 // not authorized
}

// append311 encodes a server packet for a 3.1.1 client. Properties and
// reason codes that 3.1.1 lacks are left out.
func append311(dst []byte, p packets.Packet) []byte {
	ack := func(typ byte, id uint16) []byte {
		return append(dst, typ, 2, byte(id>>8), byte(id))
	}
	switch p := p.(type) {
	case *packets.Connack:
		// §3.2: flags byte (session present) and return code.
		var sp byte
		if p.SessionPresent {
			sp = 1
		}
		return append(dst, packets.CONNACK<<4, 2, sp, connackCode311(p.ReasonCode))
	case *packets.Publish:
		h := packets.PUBLISH<<4 | p.QoS<<1
		if p.Duplicate {
			h |= 0x08
		}
		if p.Retain {
			h |= 0x01
		}
		return appendPublish311(dst, h, p.Topic, p.PacketID, p.Payload)
	case *packets.Puback:
		return ack(packets.PUBACK<<4, p.PacketID)
	case *packets.Pubrec:
		return ack(packets.PUBREC<<4, p.PacketID)
	case *packets.Pubrel:
		return ack(packets.PUBREL<<4|0x02, p.PacketID)
	case *packets.Pubcomp:
		return ack(packets.PUBCOMP<<4, p.PacketID)
	case *packets.Suback:
		// §3.9.3: 0x00-0x02 granted QoS, 0x80 failure.
		dst = append(dst, packets.SUBACK<<4)
		dst = appendVarint(dst, 2+len(p.Reasons))
		dst = append(dst, byte(p.PacketID>>8), byte(p.PacketID))
		for _, r := range p.Reasons {
			if r > codeGrantedQoS2 {
				r = 0x80
			}
			dst = append(dst, r)
		}
		return dst
	case *packets.Unsuback:
		return ack(packets.UNSUBACK<<4, p.PacketID)
	case *packets.Pingresp:
		return append(dst, packets.PINGRESP<<4, 0)
	case *packets.Disconnect:
		// 3.1.1 has no server DISCONNECT: the connection is closed.
		return dst
	}
	panic("mqtt: cannot encode packet for 3.1.1")
}
