package server

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/auth"
)

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// natsBenchPub16 is a recording of what `nats bench pub bench.core --size
// 16` (natscli v0.5.0, nats.go v1.53.1) sends: its CONNECT and PING, then
// 1,024 PUBs of 16 zero bytes.
const natsBenchPub16 = "testdata/natsbench-pub16.bin"

// replayConn is a net.Conn whose reader is a recorded client stream: the
// preamble (CONNECT, PING) once, then the recorded PUBs over and over,
// at most chunk bytes per Read, until frames whole PUBs were read; then
// io.EOF. What the server writes is discarded.
type replayConn struct {
	pre, loop []byte
	chunk     int
	off       int   // position in loop
	left      int64 // loop bytes still to deliver
}

// newReplayConn replays the recording at path, delivering msgs PUBs.
func newReplayConn(tb testing.TB, path string, msgs int, chunk int) *replayConn {
	tb.Helper()
	rec, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	i := bytes.Index(rec, []byte("PUB "))
	if i < 0 {
		tb.Fatal("no PUB in the recording")
	}
	loop := rec[i:]
	frames := bytes.Count(loop, []byte("PUB "))
	return &replayConn{pre: rec[:i], loop: loop, chunk: chunk,
		left: int64(msgs) * int64(len(loop)/frames)}
}

func (r *replayConn) Read(b []byte) (int, error) {
	if len(r.pre) > 0 {
		n := copy(b, r.pre)
		r.pre = r.pre[n:]
		return n, nil
	}
	if r.left == 0 {
		return 0, io.EOF
	}
	b = b[:min(len(b), r.chunk, int(min(r.left, int64(len(b)))))]
	n := 0
	for n < len(b) {
		k := copy(b[n:], r.loop[r.off:])
		n += k
		if r.off += k; r.off == len(r.loop) {
			r.off = 0
		}
	}
	r.left -= int64(n)
	return n, nil
}

func (r *replayConn) Write(b []byte) (int, error) { return len(b), nil }
func (r *replayConn) Close() error                { return nil }
func (r *replayConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 4222}
}
func (r *replayConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 50000}
}
func (r *replayConn) SetDeadline(time.Time) error      { return nil }
func (r *replayConn) SetReadDeadline(time.Time) error  { return nil }
func (r *replayConn) SetWriteDeadline(time.Time) error { return nil }
func (r *replayConn) SetReadBuffer(int) error          { return nil }
func (r *replayConn) CloseWrite() error                { return nil }

var _ net.Conn = (*replayConn)(nil)

// sinkConn is a subscriber's net.Conn: its reader yields script once, then
// blocks until Close; what the server writes is counted and discarded.
type sinkConn struct {
	replayConn
	script  []byte
	closed  chan struct{}
	once    sync.Once
	written atomic.Int64
}

func newSinkConn(script string) *sinkConn {
	return &sinkConn{script: []byte(script), closed: make(chan struct{})}
}

func (k *sinkConn) Read(b []byte) (int, error) {
	if len(k.script) > 0 {
		n := copy(b, k.script)
		k.script = k.script[n:]
		return n, nil
	}
	<-k.closed
	return 0, io.EOF
}

func (k *sinkConn) Write(b []byte) (int, error) {
	k.written.Add(int64(len(b)))
	return len(b), nil
}

func (k *sinkConn) Close() error {
	k.once.Do(func() { close(k.closed) })
	return nil
}

// BenchmarkPublishOnly feeds the recorded `nats bench pub` stream of 16 B
// PUBs through one client connection's read path (read loop, parser,
// routing, counters) with no subscriber on the subject, as the
// publish-only row of scripts/bench does over TCP; ns/op is the server's
// cost of one PUB. "others" adds subscriptions on other subjects (as
// JetStream's and the monitor's are), so the account is not empty; "sub1"
// and "sub4" add one and four subscriber connections on the subject
// (writing to a discarding net.Conn, so through their writers, not
// inline), timed until each has been written every message.
func BenchmarkPublishOnly(b *testing.B) {
	for _, tc := range []struct {
		name   string
		others bool
		subs   int
	}{{"empty", false, 0}, {"others", true, 0}, {"sub1", true, 1}, {"sub4", true, 4}} {
		b.Run(tc.name, func(b *testing.B) {
			s, err := New(Options{Host: "127.0.0.1", Port: RandomPort})
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Start(); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Shutdown(context.Background()) })
			if tc.others {
				ic := s.InProcess("")
				for _, subj := range []string{"$JS.API.>", "bench.other", "bench.*.x", "_INBOX.>"} {
					if _, err := ic.Subscribe(subj, "", func(Msg) {}); err != nil {
						b.Fatal(err)
					}
				}
			}
			var sinks []*sinkConn
			for range tc.subs {
				k := newSinkConn("CONNECT {\"verbose\":false}\r\nSUB bench.core 1\r\n")
				sinks = append(sinks, k)
				s.connsDone.Add(1)
				go s.serveConn(k)
			}
			acc := s.lookupAccount(auth.GlobalAccount)
			for acc.sl.Count() < tc.subs+4*boolInt(tc.others) {
				runtime.Gosched()
			}
			conn := newReplayConn(b, natsBenchPub16, b.N, 32<<10)
			b.ReportAllocs()
			b.SetBytes(16)
			b.ResetTimer()
			s.connsDone.Add(1)
			s.serveConn(conn)
			// Each subscriber has received everything (MSG bench.core 1
			// 16 and the payload: 39 bytes) when the publisher is done.
			for _, k := range sinks {
				for k.written.Load() < int64(b.N)*39 {
					runtime.Gosched()
				}
			}
			b.StopTimer()
			for _, k := range sinks {
				_ = k.Close()
			}
			if got := s.stats.inMsgs.Load(); got != int64(b.N) {
				b.Fatalf("server counted %d messages, want %d", got, b.N)
			}
		})
	}
}
