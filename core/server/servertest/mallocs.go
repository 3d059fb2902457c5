package servertest

import (
	"bytes"
	"net"
	"runtime"
	"testing"
	"time"
)

// WarmBursts is how many bursts MallocsPerMsg sends before it counts.
const WarmBursts = 20

// MallocsPerMsg measures the allocations of a hot path driven by a raw
// client: it dials addr, sends setup (a CONNECT, SUBs), then sends burst
// (msgs messages' worth of protocol; MallocsPerMsg appends the PING) again
// and again, each time reading until the PONG that answers the PING. A
// server answers the PING after everything the burst made it do on the
// publisher's read goroutine. After WarmBursts bursts (buffers, blocks and
// caches warm) it counts the whole process's mallocs over rounds bursts
// and returns them per message. check, when not nil, sees every read (to
// fail the test on an error reply). Run it in builds without -race: the
// race detector allocates on its own.
func MallocsPerMsg(t testing.TB, addr, setup string, burst []byte, msgs, rounds int, check func(read []byte)) float64 {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, Timeout)
	if err != nil {
		t.Fatalf("servertest: dial: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(setup)); err != nil {
		t.Fatalf("servertest: setup: %v", err)
	}
	burst = append(burst[:len(burst):len(burst)], "PING\r\n"...)
	buf := make([]byte, 64<<10)
	pong := []byte("PONG\r\n")
	tail := make([]byte, 0, len(buf)+len(pong)) // the last bytes read
	round := func() {
		if _, err := c.Write(burst); err != nil {
			t.Fatalf("servertest: write: %v", err)
		}
		tail = tail[:0]
		for !bytes.HasSuffix(tail, pong) {
			_ = c.SetReadDeadline(time.Now().Add(Timeout))
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("servertest: read: %v", err)
			}
			if check != nil {
				check(buf[:n])
			}
			tail = append(tail, buf[:n]...)
			if k := len(tail) - len(pong); k > 0 {
				tail = tail[:copy(tail, tail[k:])]
			}
		}
	}
	for range WarmBursts {
		round()
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range rounds {
		round()
	}
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(rounds*msgs)
}
