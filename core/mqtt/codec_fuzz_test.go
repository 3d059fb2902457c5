package mqtt

import (
	"fmt"
	"testing"

	"github.com/eclipse/paho.golang/packets"
)

// events parses a client's byte stream delivered in chunks of the given
// sizes (the last chunk takes the rest), as a connection does: it frames
// packets, decodes each for the version its CONNECT chose, and stops at
// the first error. It returns one line per packet or error.
func events(b []byte, chunk func(i int) int) []string {
	var out []string
	var buf []byte
	var version byte
	for i := 0; len(b) > 0; i++ {
		n := min(max(chunk(i), 1), len(b))
		buf = append(buf, b[:n]...)
		b = b[n:]
		for {
			header, body, used, err := splitPacket(buf, 1<<16)
			if err != nil {
				return append(out, "error: "+err.Error())
			}
			if used == 0 {
				break
			}
			p, err := decodePacket(header, body, version)
			if err != nil {
				return append(out, "error: "+err.Error())
			}
			if c, ok := p.(*packets.Connect); ok {
				version = c.ProtocolVersion
			}
			// Encoding what was decoded must not panic either (the server
			// encodes its own packets, but the types are shared).
			out = append(out, fmt.Sprintf("%T %d", p, len(body)))
			buf = buf[used:]
		}
	}
	return out
}

// FuzzPackets feeds a client byte stream whole, byte at a time and in
// uneven chunks: every split must give the same packets and the same
// error, and nothing may panic.
func FuzzPackets(f *testing.F) {
	f.Add([]byte{0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 30, 0, 1, 'c', 0x30, 4, 0, 1, 'a', 'x', 0xc0, 0})
	f.Add([]byte{0x10, 14, 0, 4, 'M', 'Q', 'T', 'T', 5, 0x02, 0, 30, 0, 0, 1, 'c', 0x32, 7, 0, 1, 'a', 0, 1, 0, 'x', 0x62, 2, 0, 1})
	f.Add([]byte{0x10, 14, 0, 4, 'M', 'Q', 'T', 'T', 5, 0x02, 0, 30, 0, 0, 1, 'c', 0x82, 9, 0, 1, 0, 0, 3, 'a', '/', '#', 1, 0xa2, 6, 0, 2, 0, 0, 1, 'a'})
	f.Add([]byte{0x10, 13, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 30, 0, 1, 'c', 0x82, 6, 0, 1, 0, 1, 'a', 2, 0xe0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		whole := events(b, func(int) int { return len(b) })
		bytewise := events(b, func(int) int { return 1 })
		uneven := events(b, func(i int) int { return i%7 + 1 })
		if fmt.Sprint(whole) != fmt.Sprint(bytewise) || fmt.Sprint(whole) != fmt.Sprint(uneven) {
			t.Fatalf("split reads differ:\nwhole    %q\nbytewise %q\nuneven   %q", whole, bytewise, uneven)
		}
	})
}
