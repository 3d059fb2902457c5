package proto

import (
	"fmt"
	"strings"
	"testing"
)

// benchStream returns a buffer holding copies of frame, about 64 KiB.
func benchStream(frame string) []byte {
	return []byte(strings.Repeat(frame, max(1, (64<<10)/len(frame))))
}

func BenchmarkParsePub(b *testing.B) {
	for _, size := range []int{16, 1024} {
		frame := fmt.Sprintf("PUB foo.bar.baz _INBOX.abcdefgh.1 %d\r\n%s\r\n", size, strings.Repeat("x", size))
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			benchParse(b, ClientOps, frame)
		})
	}
}

// BenchmarkParseNatsBenchPub parses the PUB that `nats bench pub --size
// 16` sends.
func BenchmarkParseNatsBenchPub(b *testing.B) {
	benchParse(b, ClientOps, "PUB bench.core 16\r\n"+strings.Repeat("\x00", 16)+"\r\n")
}

func BenchmarkParseHPub(b *testing.B) {
	body := hdrKV + strings.Repeat("x", 128)
	benchParse(b, ClientOps, fmt.Sprintf("HPUB foo.bar.baz 18 %d\r\n%s\r\n", len(body), body))
}

func BenchmarkParseLeafMsg(b *testing.B) {
	benchParse(b, LeafOps, "LMSG foo.bar.baz + _INBOX.abc.1 q1 q2 128\r\n"+strings.Repeat("x", 128)+"\r\n")
}

// benchParse parses frame b.N times from a buffer of back-to-back copies.
func benchParse(b *testing.B, set OpSet, frame string) {
	stream := benchStream(frame)
	p := NewParser(set, Limits{})
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	buf := stream
	for b.Loop() {
		if len(buf) == 0 {
			buf = stream
		}
		op, n, err := p.Next(buf)
		if err != nil || op == nil {
			b.Fatal(op, err)
		}
		buf = buf[n:]
	}
}

// BenchmarkParsePubSplit parses 1 KiB PUBs whose reads end in the middle of
// every message body.
func BenchmarkParsePubSplit(b *testing.B) {
	frame := "PUB foo.bar.baz 1024\r\n" + strings.Repeat("x", 1024) + "\r\n"
	first, second := []byte(frame[:500]), []byte(frame[500:])
	p := NewParser(ClientOps, Limits{})
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	for b.Loop() {
		if op, _, err := p.Next(first); op != nil || err != nil {
			b.Fatal(op, err)
		}
		if op, _, err := p.Next(second); op == nil || err != nil {
			b.Fatal(op, err)
		}
	}
}

func BenchmarkAppendMsg(b *testing.B) {
	subject, sid, reply := []byte("foo.bar.baz"), []byte("123"), []byte("_INBOX.abcdefghijklmnopqrstuv.1")
	dst := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendMsg(dst[:0], subject, sid, reply, 18, 1024)
	}
	b.SetBytes(int64(len(dst)))
}
