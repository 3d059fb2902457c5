package mqtt

import (
	"bufio"
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The inbound fast path of MQTT 5.
//
// paho.golang reads every packet into freshly allocated buffers (several
// kilobytes a PUBLISH: a bytes.Buffer grown past the packet, the topic,
// the payload, the properties, two Publish structs) on its read
// goroutine, then hands each PUBLISH through a channel to a second
// goroutine that runs the handlers and sends the PUBACK with one write
// of its own. On two shared cores that was most of the bridge's cost.
//
// inboundConn sits under paho as its net.Conn. It reads the broker's
// byte stream through a buffer and decodes each QoS 0 or 1 PUBLISH in
// place; when the bridge takes it inline (a core route: published on the
// bus at once, see run.inline) it is handled there, on paho's read
// goroutine, without a copy, and its PUBACK joins a batch written when
// the read buffer runs dry. Every other packet (CONNACK, SUBACK, PUBACK
// of outbound messages, PINGRESP, QoS 2, stored routes, MQTT 5 requests,
// a topic alias, a packet larger than the buffer) passes through
// unchanged to paho, which handles it as before. paho writes each packet
// under the conn's Lock (packets.ControlPacket.WriteTo takes a
// sync.Locker), so a batch of PUBACKs never lands inside one of its
// packets.
//
// Ordering: inline messages are published in the order they arrive;
// messages passed to paho keep their order among themselves. A core
// route's PUBACK can go out before that of an earlier message of a stored
// route, which waits for its stream: brokers accept acknowledgements out
// of order, and the alternative, holding every core acknowledgement
// behind the slowest store, is what made core routes of a mixed bridge
// wait.

// inboundBuffer is the read buffer of an inboundConn; PUBLISH packets
// larger than it go to paho.
const inboundBuffer = 64 << 10

// maxAckBatch flushes a batch of PUBACKs once it holds this many bytes
// even while more input is buffered.
const maxAckBatch = 4 << 10

// inlineFunc handles an inbound PUBLISH on the read goroutine: handled
// false passes the packet to paho; ack false (with handled) leaves it
// unacknowledged. p and its slices and strings live only for the call.
type inlineFunc func(p *packet) (handled, ack bool)

// inboundConn is the connection to the broker under paho: buffered
// reads, the inline handling of PUBLISH packets, batched PUBACKs, and the
// first bytes the broker sent, to recognise a 3.1.1 CONNACK refusing MQTT
// 5.
type inboundConn struct {
	net.Conn
	r      *bufio.Reader
	inline inlineFunc // nil: everything goes to paho
	pass   int        // bytes of the current packet still to hand to paho

	p      packet // the inline packet, reused
	expiry uint32 // p.expiry points here
	acks   []byte // PUBACKs to write

	wmu sync.Mutex // held around every write: paho's packets and the acks

	sniffed atomic.Bool // first is complete
	mu      sync.Mutex
	first   []byte
}

func newInboundConn(c net.Conn, inline inlineFunc) *inboundConn {
	return &inboundConn{Conn: c, r: bufio.NewReaderSize(c, inboundBuffer), inline: inline}
}

// Lock and Unlock make the conn a sync.Locker, which paho holds while it
// writes a packet in parts.
func (c *inboundConn) Lock() { c.wmu.Lock() }

// Unlock releases Lock.
func (c *inboundConn) Unlock() { c.wmu.Unlock() }

// Read hands paho the bytes of the packets it handles; only paho's read
// loop calls it.
func (c *inboundConn) Read(b []byte) (int, error) {
	for c.pass == 0 {
		if c.r.Buffered() == 0 || len(c.acks) >= maxAckBatch {
			if err := c.flushAcks(); err != nil {
				return 0, err
			}
		}
		n, handled, err := c.next()
		if err != nil {
			return 0, err
		}
		if !handled {
			c.pass = n
		}
	}
	if err := c.flushAcks(); err != nil { // before paho sees what follows them
		return 0, err
	}
	if len(b) > c.pass {
		b = b[:c.pass]
	}
	n, err := c.r.Read(b)
	c.pass -= n
	if !c.sniffed.Load() {
		c.mu.Lock()
		if k := min(n, 4-len(c.first)); k > 0 {
			c.first = append(c.first, b[:k]...)
		}
		if len(c.first) == 4 {
			c.sniffed.Store(true)
		}
		c.mu.Unlock()
	}
	return n, err
}

// next reads the next packet's fixed header and returns the packet's
// size; a PUBLISH the bridge takes inline is handled and consumed
// (handled true), anything else is left in the buffer for paho.
func (c *inboundConn) next() (size int, handled bool, err error) {
	var hdr []byte
	// The remaining length, a variable byte integer of 1–4 bytes [MQTT-1.5.5].
	length, mul, i := 0, 1, 1
	for {
		if i > 4 {
			return 1, false, nil // malformed: paho reports it
		}
		if hdr, err = c.r.Peek(i + 1); err != nil {
			return 0, false, err
		}
		d := hdr[i]
		length += int(d&0x7f) * mul
		mul <<= 7
		i++
		if d&0x80 == 0 {
			break
		}
	}
	size = i + length
	kind, qos := hdr[0]>>4, (hdr[0]>>1)&3
	if kind != 3 || qos > 1 || c.inline == nil || size > c.r.Size() {
		return size, false, nil
	}
	pk, err := c.r.Peek(size)
	if err != nil {
		return 0, false, err
	}
	if !decodePublish(&c.p, &c.expiry, hdr[0], pk[i:]) {
		return size, false, nil
	}
	ok, ack := c.inline(&c.p)
	if !ok {
		return size, false, nil
	}
	id := c.p.packetID
	c.p = packet{user: c.p.user[:0]}
	_, _ = c.r.Discard(size)
	if ack && qos == 1 {
		// PUBACK, reason code 0 and no properties left out [MQTT-3.4.2.1].
		c.acks = append(c.acks, 0x40, 2, byte(id>>8), byte(id))
	}
	return size, true, nil
}

// flushAcks writes the batched PUBACKs.
func (c *inboundConn) flushAcks() error {
	if len(c.acks) == 0 {
		return nil
	}
	c.wmu.Lock()
	_, err := c.Conn.Write(c.acks)
	c.wmu.Unlock()
	c.acks = c.acks[:0]
	return err
}

// refusedAs311 reports whether the broker's first packet was a 3.1.1
// CONNACK with return code 1 (unacceptable protocol version).
func (c *inboundConn) refusedAs311() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return string(c.first) == "\x20\x02\x00\x01"
}

// decodePublish decodes the MQTT 5 PUBLISH whose first byte is first and
// whose variable header and payload are body into p, which then refers
// into body (strings included, without a copy): valid only while body
// is. It reports false for what the fast path leaves to paho: a malformed
// packet, a topic alias, an unknown property.
func decodePublish(p *packet, expiry *uint32, first byte, body []byte) bool {
	user := p.user[:0]
	*p = packet{qos: (first >> 1) & 3, retain: first&1 != 0, dup: first&8 != 0}
	// Topic name, a UTF-8 string [MQTT-3.3.2.1].
	topic, rest, ok := cutBinary(body)
	if !ok || len(topic) == 0 {
		p.user = user
		return false // empty: a topic alias names it
	}
	p.topic = bytesString(topic)
	if p.qos > 0 { // Packet identifier [MQTT-3.3.2.2].
		if len(rest) < 2 {
			p.user = user
			return false
		}
		p.packetID, rest = binary.BigEndian.Uint16(rest), rest[2:]
	}
	// Properties [MQTT-3.3.2.3]: a length, then identifier and value pairs.
	n, k := uvarint(rest)
	if k == 0 || n > len(rest)-k {
		p.user = user
		return false
	}
	props, payload := rest[k:k+n], rest[k+n:]
	for len(props) > 0 {
		id := props[0]
		props = props[1:]
		var v, v2 []byte
		switch id {
		case 0x01: // Payload format indicator, a byte.
			if len(props) < 1 {
				p.user = user
				return false
			}
			props = props[1:]
		case 0x02: // Message expiry interval, four bytes.
			if len(props) < 4 {
				p.user = user
				return false
			}
			*expiry = binary.BigEndian.Uint32(props)
			p.expiry, props = expiry, props[4:]
		case 0x03: // Content type.
			if v, props, ok = cutBinary(props); !ok {
				p.user = user
				return false
			}
			p.contentType = bytesString(v)
		case 0x08: // Response topic.
			if v, props, ok = cutBinary(props); !ok {
				p.user = user
				return false
			}
			p.responseTopic = bytesString(v)
		case 0x09: // Correlation data.
			if v, props, ok = cutBinary(props); !ok {
				p.user = user
				return false
			}
			p.correlation = v
		case 0x0B: // Subscription identifier, a variable byte integer.
			if _, k := uvarint(props); k == 0 {
				p.user = user
				return false
			} else {
				props = props[k:]
			}
		case 0x26: // User property, a string pair.
			if v, props, ok = cutBinary(props); ok {
				v2, props, ok = cutBinary(props)
			}
			if !ok {
				p.user = user
				return false
			}
			user = append(user, property{bytesString(v), bytesString(v2)})
		default: // 0x23 topic alias and anything not allowed in a PUBLISH
			p.user = user
			return false
		}
	}
	p.user, p.payload = user, payload
	return true
}

// cutBinary splits b after a two-byte length and that many bytes
// [MQTT-1.5.4, MQTT-1.5.6].
func cutBinary(b []byte) (v, rest []byte, ok bool) {
	if len(b) < 2 {
		return nil, nil, false
	}
	n := int(binary.BigEndian.Uint16(b))
	if len(b) < 2+n {
		return nil, nil, false
	}
	return b[2 : 2+n], b[2+n:], true
}

// uvarint decodes a variable byte integer [MQTT-1.5.5]: its value and
// length, or a length of 0 when b does not start with one.
func uvarint(b []byte) (v, n int) {
	mul := 1
	for i := 0; i < 4 && i < len(b); i++ {
		v += int(b[i]&0x7f) * mul
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
		mul <<= 7
	}
	return 0, 0
}

// bytesString is b as a string without a copy; b must not change while
// the string is in use (an inline packet's fields, for one handler call).
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}
