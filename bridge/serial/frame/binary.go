package frame

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// DefaultMaxBinary is a binary framer's maximum payload when unset.
const DefaultMaxBinary = 64 << 10

// LengthPrefixed is the length-prefixed binary framer: an unsigned length
// of Size bytes, then the payload.
type LengthPrefixed struct {
	// Size is the prefix's width: 1, 2 or 4 bytes.
	Size int
	// LittleEndian orders the prefix's bytes least significant first;
	// big endian (network order) by default.
	LittleEndian bool
	// MaxLen is the longest payload accepted (DefaultMaxBinary when 0,
	// and never more than the prefix can say).
	MaxLen int

	in buffer
	// skip is how many bytes of a too-long frame are still to drop.
	skip int
}

// NewLengthPrefixed returns a length-prefixed framer, or an error for a
// prefix size other than 1, 2 or 4.
func NewLengthPrefixed(size int, littleEndian bool, maxLen int) (*LengthPrefixed, error) {
	if size != 1 && size != 2 && size != 4 {
		return nil, fmt.Errorf("frame: a length prefix is 1, 2 or 4 bytes, not %d", size)
	}
	return &LengthPrefixed{Size: size, LittleEndian: littleEndian, MaxLen: maxLen}, nil
}

// byteOrder reads and appends prefixes.
type byteOrder interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

func (l *LengthPrefixed) order() byteOrder {
	if l.LittleEndian {
		return binary.LittleEndian
	}
	return binary.BigEndian
}

func (l *LengthPrefixed) maxLen() int {
	m := l.MaxLen
	if m <= 0 {
		m = DefaultMaxBinary
	}
	if limit := 1<<(8*min(l.Size, 4)) - 1; l.Size < 4 && m > limit {
		m = limit
	}
	return m
}

// Feed implements Framer.
func (l *LengthPrefixed) Feed(b []byte) { l.in.feed(b) }

// Reset implements Framer.
func (l *LengthPrefixed) Reset() { l.in.reset(); l.skip = 0 }

// Next implements Framer. A length above the maximum is an ErrTooLong;
// the framer drops that many bytes to stay in step with the stream.
func (l *LengthPrefixed) Next() (Frame, bool, error) {
	p := l.in.pending()
	if l.skip > 0 {
		n := min(l.skip, len(p))
		l.in.consume(n)
		l.skip -= n
		p = p[n:]
		if l.skip > 0 {
			return Frame{}, false, nil
		}
	}
	if len(p) < l.Size {
		return Frame{}, false, nil
	}
	var n uint64
	switch l.Size {
	case 1:
		n = uint64(p[0])
	case 2:
		n = uint64(l.order().Uint16(p))
	default:
		n = uint64(l.order().Uint32(p))
	}
	if n > uint64(l.maxLen()) {
		l.in.consume(l.Size)
		l.skip = int(n)
		return Frame{}, false, badFrame(ErrTooLong, int(n), "length %d exceeds %d bytes", n, l.maxLen())
	}
	if uint64(len(p)-l.Size) < n {
		return Frame{}, false, nil
	}
	data := p[l.Size : l.Size+int(n)]
	l.in.consume(l.Size + int(n))
	return Frame{Data: data}, true, nil
}

// Encode implements Framer.
func (l *LengthPrefixed) Encode(dst, msg []byte) ([]byte, error) {
	if len(msg) > l.maxLen() {
		return dst, badFrame(ErrTooLong, len(msg), "payload exceeds %d bytes", l.maxLen())
	}
	switch l.Size {
	case 1:
		dst = append(dst, byte(len(msg)))
	case 2:
		dst = l.order().AppendUint16(dst, uint16(len(msg)))
	default:
		dst = l.order().AppendUint32(dst, uint32(len(msg)))
	}
	return append(dst, msg...), nil
}

// Delimited is the delimiter-framed binary framer with byte stuffing.
type Delimited struct {
	// Delimiter ends a frame; Escape introduces a stuffed byte (the
	// original XOR 0x20). They must differ.
	Delimiter, Escape byte
	// MaxLen is the longest payload accepted, after unescaping
	// (DefaultMaxBinary when 0).
	MaxLen int

	in  buffer
	out []byte
	// discarding: a too-long frame is being dropped up to its delimiter.
	discarding bool
}

// NewDelimited returns a delimiter framer, or an error when delimiter
// and escape are the same byte.
func NewDelimited(delimiter, escape byte, maxLen int) (*Delimited, error) {
	if delimiter == escape {
		return nil, fmt.Errorf("frame: delimiter and escape are both %#02x", delimiter)
	}
	return &Delimited{Delimiter: delimiter, Escape: escape, MaxLen: maxLen}, nil
}

func (d *Delimited) maxLen() int {
	if d.MaxLen <= 0 {
		return DefaultMaxBinary
	}
	return d.MaxLen
}

// Feed implements Framer.
func (d *Delimited) Feed(b []byte) { d.in.feed(b) }

// Reset implements Framer.
func (d *Delimited) Reset() { d.in.reset(); d.discarding = false }

// Next implements Framer.
func (d *Delimited) Next() (Frame, bool, error) {
	for {
		p := d.in.pending()
		i := bytes.IndexByte(p, d.Delimiter)
		if i < 0 {
			// Bound the buffer: twice the maximum holds any escaped frame.
			if len(p) > 2*d.maxLen()+1 && !d.discarding {
				d.in.consume(len(p))
				d.discarding = true
				return Frame{}, false, badFrame(ErrTooLong, len(p), "no delimiter within %d bytes", len(p))
			}
			if d.discarding {
				d.in.consume(len(p))
			}
			return Frame{}, false, nil
		}
		raw := p[:i]
		d.in.consume(i + 1)
		if d.discarding {
			d.discarding = false
			continue
		}
		if len(raw) == 0 {
			continue
		}
		d.out = d.out[:0]
		for j := 0; j < len(raw); j++ {
			c := raw[j]
			if c == d.Escape {
				j++
				if j == len(raw) {
					return Frame{}, false, badFrame(ErrMalformed, len(raw), "escape byte before the delimiter")
				}
				c = raw[j] ^ 0x20
				if c != d.Delimiter && c != d.Escape {
					return Frame{}, false, badFrame(ErrMalformed, len(raw), "escaped byte %#02x needs no escape", c)
				}
			}
			d.out = append(d.out, c)
		}
		if len(d.out) > d.maxLen() {
			return Frame{}, false, badFrame(ErrTooLong, len(d.out), "payload exceeds %d bytes", d.maxLen())
		}
		return Frame{Data: d.out}, true, nil
	}
}

// Encode implements Framer: msg's delimiter and escape bytes are stuffed
// and the delimiter appended. An empty msg cannot be sent (the receiver
// skips empty frames).
func (d *Delimited) Encode(dst, msg []byte) ([]byte, error) {
	if len(msg) == 0 {
		return dst, badFrame(ErrMalformed, 0, "empty payload")
	}
	if len(msg) > d.maxLen() {
		return dst, badFrame(ErrTooLong, len(msg), "payload exceeds %d bytes", d.maxLen())
	}
	for _, c := range msg {
		if c == d.Delimiter || c == d.Escape {
			dst = append(dst, d.Escape, c^0x20)
			continue
		}
		dst = append(dst, c)
	}
	return append(dst, d.Delimiter), nil
}
