package mqtt

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
)

// MQTT 3.1.1 through paho.golang, which speaks MQTT 5 only.
//
// The two versions share their packets but for what MQTT 5 added: the
// properties of most packets, the reason codes of the acknowledgements,
// the subscription options beyond the QoS. v311Conn sits between paho
// (above it, the bridge's inboundConn) and the broker and rewrites each
// packet at that seam: what paho writes loses its properties, its
// acknowledgements' reason codes and the protocol level 5 of CONNECT
// (4 instead); what the broker sends gains empty properties and, in a
// CONNACK, the MQTT 5 reason code of its return code. paho's session
// state, keep-alive, QoS 1 and 2 flows and packet identifiers then serve
// both versions.

// errMalformed311 is a packet v311Conn cannot rewrite.
var errMalformed311 = errors.New("mqtt: malformed MQTT 3.1.1 packet")

// v311Conn is a connection to an MQTT 3.1.1 broker that paho reads and
// writes as MQTT 5.
type v311Conn struct {
	net.Conn
	r     *bufio.Reader
	in    []byte // rewritten bytes of the broker's current packet not yet read
	inBuf []byte // in's backing array, reused
	buf   []byte // the body of the broker's current packet, reused

	wmu  sync.Mutex
	wbuf []byte // what paho wrote of its next packet
	out  []byte // the rewritten packet, reused
}

func newV311Conn(c net.Conn) *v311Conn {
	return &v311Conn{Conn: c, r: bufio.NewReaderSize(c, 16<<10)}
}

// Read returns the broker's packets as MQTT 5.
func (c *v311Conn) Read(b []byte) (int, error) {
	for len(c.in) == 0 {
		if err := c.readPacket(); err != nil {
			return 0, err
		}
	}
	n := copy(b, c.in)
	c.in = c.in[n:]
	return n, nil
}

// readPacket reads one packet of the broker into c.in, rewritten.
func (c *v311Conn) readPacket() error {
	first, err := c.r.ReadByte()
	if err != nil {
		return err
	}
	length, mul := 0, 1
	for i := 0; ; i++ {
		if i == 4 {
			return errMalformed311
		}
		d, err := c.r.ReadByte()
		if err != nil {
			return noEOF(err)
		}
		length += int(d&0x7f) * mul
		mul <<= 7
		if d&0x80 == 0 {
			break
		}
	}
	if cap(c.buf) < length {
		c.buf = make([]byte, length)
	}
	body := c.buf[:length]
	if _, err := io.ReadFull(c.r, body); err != nil {
		return noEOF(err)
	}
	out, err := to5(c.inBuf[:0], first, body)
	if err != nil {
		return err
	}
	c.inBuf = out
	c.in = out
	return nil
}

// noEOF is err, with a connection closed inside a packet reported as
// such rather than as a clean end.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Write takes paho's MQTT 5 bytes, which may split a packet over calls,
// and sends each packet once it is complete, as MQTT 3.1.1.
func (c *v311Conn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.wbuf = append(c.wbuf, b...)
	for {
		first, body, n, ok, err := cutPacket(c.wbuf)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		c.out, err = to311(c.out[:0], first, body)
		if err != nil {
			return 0, err
		}
		if len(c.out) > 0 {
			if _, err := c.Conn.Write(c.out); err != nil {
				return 0, err
			}
		}
		c.wbuf = c.wbuf[:copy(c.wbuf, c.wbuf[n:])]
	}
	return len(b), nil
}

// cutPacket returns the first packet of b: its first byte, its body and
// its size, ok false while b does not hold all of it.
func cutPacket(b []byte) (first byte, body []byte, n int, ok bool, err error) {
	if len(b) < 2 {
		return 0, nil, 0, false, nil
	}
	length, mul, i := 0, 1, 1
	for {
		if i == 5 {
			return 0, nil, 0, false, errMalformed311
		}
		if i >= len(b) {
			return 0, nil, 0, false, nil
		}
		d := b[i]
		length += int(d&0x7f) * mul
		mul <<= 7
		i++
		if d&0x80 == 0 {
			break
		}
	}
	if len(b)-i < length {
		return 0, nil, 0, false, nil
	}
	return b[0], b[i : i+length], i + length, true, nil
}

// appendFixed appends a fixed header: first, then the remaining length
// [MQTT-2.2.3].
func appendFixed(dst []byte, first byte, length int) []byte {
	dst = append(dst, first)
	for {
		d := byte(length & 0x7f)
		length >>= 7
		if length > 0 {
			dst = append(dst, d|0x80)
			continue
		}
		return append(dst, d)
	}
}

// cutProps splits b after an MQTT 5 property list: a variable byte
// integer length and that many bytes.
func cutProps(b []byte) (props, rest []byte, ok bool) {
	n, k := uvarint(b)
	if k == 0 || n > len(b)-k {
		return nil, nil, false
	}
	return b[k : k+n], b[k+n:], true
}

// connack5 are the MQTT 5 reason codes of the 3.1.1 CONNACK return
// codes 1–5 [MQTT-3.2.2.3].
var connack5 = [...]byte{1: 0x84, 2: 0x85, 3: 0x88, 4: 0x86, 5: 0x87}

// code311 is the MQTT 3.1.1 return code a CONNACK reason code of to5
// stands for.
func code311(code byte) byte {
	for rc, c := range connack5 {
		if rc > 0 && c == code {
			return byte(rc)
		}
	}
	return code
}

// to5 appends the MQTT 3.1.1 packet of first and body, as MQTT 5, to
// dst.
func to5(dst []byte, first byte, body []byte) ([]byte, error) {
	switch first >> 4 {
	case 2: // CONNACK: flags, return code; then no properties.
		if len(body) != 2 {
			return nil, errMalformed311
		}
		rc := body[1]
		if int(rc) < len(connack5) && rc > 0 {
			rc = connack5[rc]
		} else if rc != 0 {
			rc = 0x80 // unspecified error
		}
		dst = appendFixed(dst, first, 3)
		return append(dst, body[0], rc, 0), nil
	case 3: // PUBLISH: topic, packet identifier at QoS 1 and 2; no properties.
		if len(body) < 2 {
			return nil, errMalformed311
		}
		h := 2 + int(binary.BigEndian.Uint16(body))
		if (first>>1)&3 > 0 {
			h += 2
		}
		if h > len(body) {
			return nil, errMalformed311
		}
		dst = appendFixed(dst, first, len(body)+1)
		dst = append(dst, body[:h]...)
		dst = append(dst, 0)
		return append(dst, body[h:]...), nil
	case 9, 11: // SUBACK, UNSUBACK: packet identifier, no properties, codes.
		if len(body) < 2 {
			return nil, errMalformed311
		}
		dst = appendFixed(dst, first, len(body)+1)
		dst = append(dst, body[:2]...)
		dst = append(dst, 0)
		return append(dst, body[2:]...), nil
	case 4, 5, 6, 7: // PUBACK, PUBREC, PUBREL, PUBCOMP: a packet identifier, which MQTT 5 reads as success.
		if len(body) != 2 {
			return nil, errMalformed311
		}
	case 13: // PINGRESP
		if len(body) != 0 {
			return nil, errMalformed311
		}
	}
	// Anything else a broker should not send; paho refuses it as it is.
	dst = appendFixed(dst, first, len(body))
	return append(dst, body...), nil
}

// to311 appends paho's MQTT 5 packet of first and body, as MQTT 3.1.1,
// to dst.
func to311(dst []byte, first byte, body []byte) ([]byte, error) {
	switch first >> 4 {
	case 1: // CONNECT
		// Protocol name, level, flags, keep alive, properties; the payload:
		// client identifier, will properties, topic and payload when the
		// will flag is set, user name, password.
		return connect311(dst, first, body)
	case 3: // PUBLISH: topic, packet identifier, properties, payload.
		if len(body) < 2 {
			return nil, errMalformed311
		}
		h := 2 + int(binary.BigEndian.Uint16(body))
		if (first>>1)&3 > 0 {
			h += 2
		}
		if h > len(body) {
			return nil, errMalformed311
		}
		_, payload, ok := cutProps(body[h:])
		if !ok {
			return nil, errMalformed311
		}
		dst = appendFixed(dst, first, h+len(payload))
		dst = append(dst, body[:h]...)
		return append(dst, payload...), nil
	case 4, 5, 6, 7: // PUBACK, PUBREC, PUBREL, PUBCOMP: the packet identifier only.
		if len(body) < 2 {
			return nil, errMalformed311
		}
		dst = appendFixed(dst, first, 2)
		return append(dst, body[:2]...), nil
	case 8, 10: // SUBSCRIBE, UNSUBSCRIBE: packet identifier, properties, filters.
		if len(body) < 2 {
			return nil, errMalformed311
		}
		_, list, ok := cutProps(body[2:])
		if !ok {
			return nil, errMalformed311
		}
		dst = appendFixed(dst, first, 2+len(list))
		dst = append(dst, body[:2]...)
		for len(list) > 0 {
			f, rest, ok := cutBinary(list)
			if !ok {
				return nil, errMalformed311
			}
			dst = append(dst, list[:2+len(f)]...)
			list = rest
			if first>>4 == 8 {
				if len(list) == 0 {
					return nil, errMalformed311
				}
				// Options: the QoS; no local, retain as published and
				// retain handling are MQTT 5's [MQTT-3.8.3.1].
				dst = append(dst, list[0]&3)
				list = list[1:]
			}
		}
		return dst, nil
	case 14: // DISCONNECT: no reason code.
		return appendFixed(dst, first, 0), nil
	case 15: // AUTH: none in MQTT 3.1.1.
		return nil, errors.New("mqtt: MQTT 3.1.1 has no AUTH")
	}
	// PINGREQ.
	dst = appendFixed(dst, first, len(body))
	return append(dst, body...), nil
}

// connect311 appends paho's MQTT 5 CONNECT of body as MQTT 3.1.1 to dst.
func connect311(dst []byte, first byte, body []byte) ([]byte, error) {
	// Protocol name and level, flags, keep alive [MQTT-3.1.2], then
	// properties; the payload: client identifier, the will's properties,
	// topic and payload when the will flag is set, user name, password.
	if len(body) < 10 || string(body[:6]) != "\x00\x04MQTT" {
		return nil, errMalformed311
	}
	flags := body[7]
	_, rest, ok := cutProps(body[10:])
	if !ok {
		return nil, errMalformed311
	}
	id, rest, ok := cutBinary(rest)
	if !ok {
		return nil, errMalformed311
	}
	var willTopic, willPayload []byte
	if flags&0x04 != 0 {
		if _, rest, ok = cutProps(rest); ok {
			if willTopic, rest, ok = cutBinary(rest); ok {
				willPayload, rest, ok = cutBinary(rest)
			}
		}
		if !ok {
			return nil, errMalformed311
		}
	}
	length := 10 + 2 + len(id) + len(rest)
	if flags&0x04 != 0 {
		length += 4 + len(willTopic) + len(willPayload)
	}
	dst = appendFixed(dst, first, length)
	dst = append(dst, body[:6]...)
	dst = append(dst, 4, flags, body[8], body[9])
	dst = appendBinary(dst, id)
	if flags&0x04 != 0 {
		dst = appendBinary(dst, willTopic)
		dst = appendBinary(dst, willPayload)
	}
	return append(dst, rest...), nil
}

// appendBinary appends b with its two-byte length [MQTT-1.5.6].
func appendBinary(dst, b []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(b)))
	return append(dst, b...)
}
