package server_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

// TestInProcessSlowConsumerCutOff requires a subscriber that stops reading
// to be cut off as a slow consumer when an in-process publisher (which
// writes to subscribers on its own goroutine where it can) floods it,
// without holding up that publisher or a healthy subscriber.
func TestInProcessSlowConsumerCutOff(t *testing.T) {
	s := servertest.Start(t, server.Options{MaxPending: 1 << 20, MaxPayload: 64 << 10})
	slow, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = slow.Close() })
	require.NoError(t, slow.(*net.TCPConn).SetReadBuffer(4096))
	_, err = slow.Write([]byte("CONNECT {\"verbose\":false}\r\nSUB data 1\r\nPING\r\n"))
	require.NoError(t, err)
	readUntil(t, slow, "PONG\r\n")
	// From here on the slow subscriber reads nothing.

	fast := connect(t, s)
	var got atomic.Int64
	progress := make(chan struct{}, 1)
	_, err = fast.Subscribe("data", func(*nats.Msg) {
		got.Add(1)
		select {
		case progress <- struct{}{}:
		default:
		}
	})
	require.NoError(t, err)
	require.NoError(t, fast.Flush())

	ic := s.InProcess("")
	const n, window = 8 << 10, 256 // 8 MiB in all; the fast one lags by at most window
	payload := make([]byte, 1024)
	published := make(chan error, 1)
	go func() {
		for i := 1; i <= n; i++ {
			if ic.Publish("data", "", nil, payload) == 0 {
				published <- fmt.Errorf("message %d reached no subscriber", i)
				return
			}
			for int64(i)-got.Load() >= window {
				select {
				case <-progress:
				case <-time.After(wait):
					published <- fmt.Errorf("fast subscriber stuck at %d of %d", got.Load(), i)
					return
				}
			}
		}
		published <- nil
	}()
	select {
	case err := <-published:
		require.NoError(t, err)
	case <-time.After(2 * wait):
		t.Fatalf("in-process publisher stalled after %d deliveries to the fast subscriber", got.Load())
	}
	require.NoError(t, fast.Flush())
	deadline := time.Now().Add(wait)
	for got.Load() < n && time.Now().Before(deadline) {
		select {
		case <-progress:
		case <-time.After(wait):
		}
	}
	require.Equal(t, got.Load(), int64(n), "messages at the fast subscriber")
	if v := s.Varz(); v.SlowConsumers != 1 {
		t.Errorf("slow_consumers = %d, want 1", v.SlowConsumers)
	}
	closed := s.Connections(monitor.ConnClosed, false)
	if len(closed) != 1 || closed[0].Reason != "Slow Consumer (Pending Bytes)" {
		t.Fatalf("closed connections: %+v", closed)
	}
	if !fast.IsConnected() {
		t.Fatal("healthy subscriber was cut off")
	}
}

// TestOrderingConcurrentPublishers requires every subscriber to receive
// each publisher's messages in order, intact, when network and in-process
// publishers write to the same subscribers at once (and so may write
// their sockets from several goroutines in turn).
func TestOrderingConcurrentPublishers(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	const pubs, msgs = 4, 2000 // of each kind
	type result struct {
		next map[string]int
		err  error
		done chan struct{}
	}
	var subs []*result
	for i := 0; i < 2; i++ {
		r := &result{next: map[string]int{}, done: make(chan struct{})}
		subs = append(subs, r)
		nc := connect(t, s)
		var mu sync.Mutex
		total := 0
		_, err := nc.Subscribe("order.>", func(m *nats.Msg) {
			mu.Lock()
			defer mu.Unlock()
			from := m.Subject[len("order."):]
			seq, err := strconv.Atoi(string(m.Data))
			if r.err == nil && (err != nil || seq != r.next[from]) {
				r.err = fmt.Errorf("from %s: got %q, want %d", from, m.Data, r.next[from])
			}
			r.next[from] = seq + 1
			if total++; total == 2*pubs*msgs {
				close(r.done)
			}
		})
		require.NoError(t, err)
		require.NoError(t, nc.Flush())
	}
	var wg sync.WaitGroup
	for p := 0; p < pubs; p++ {
		nc := connect(t, s)
		ic := s.InProcess("")
		wg.Add(2)
		go func() {
			defer wg.Done()
			subj := "order.net" + strconv.Itoa(p)
			for i := 0; i < msgs; i++ {
				if err := nc.Publish(subj, []byte(strconv.Itoa(i))); err != nil {
					t.Error(err)
					return
				}
			}
			if err := nc.Flush(); err != nil {
				t.Error(err)
			}
		}()
		go func() {
			defer wg.Done()
			subj := "order.ip" + strconv.Itoa(p)
			var buf []byte
			for i := 0; i < msgs; i++ {
				buf = strconv.AppendInt(buf[:0], int64(i), 10)
				if ic.Publish(subj, "", nil, buf) != 2 {
					t.Errorf("%s message %d not delivered to both subscribers", subj, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, r := range subs {
		select {
		case <-r.done:
		case <-time.After(wait):
			t.Fatalf("subscriber %d: incomplete: %v", i, r.next)
		}
		require.NoError(t, r.err, "subscriber "+strconv.Itoa(i))
		for from, next := range r.next {
			if next != msgs {
				t.Errorf("subscriber %d got %d messages from %s, want %d", i, next, from, msgs)
			}
		}
	}
}

// readUntil reads c until it has seen marker, failing after wait.
func readUntil(t *testing.T, c net.Conn, marker string) {
	t.Helper()
	var seen []byte
	buf := make([]byte, 512)
	_ = c.SetReadDeadline(time.Now().Add(wait))
	defer func() { _ = c.SetReadDeadline(time.Time{}) }()
	for !bytes.Contains(seen, []byte(marker)) {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatalf("reading for %q: %v (got %q)", strings.TrimSpace(marker), err, seen)
		}
		seen = append(seen, buf[:n]...)
	}
}

// TestOrderingPartialWrites requires a subscriber whose socket takes only
// part of what is pending (more than the socket buffers hold, read
// steadily) to get
// every message in order from in-process and network publishers at once:
// what an inline write leaves behind goes out before what came later.
func TestOrderingPartialWrites(t *testing.T) {
	s := servertest.Start(t, server.Options{MaxPending: 64 << 20})
	raw, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close() })
	// (A receive buffer below the loopback MSS would stall TCP itself, so
	// the volume, not a small buffer, makes the socket fill.)
	_, err = raw.Write([]byte("CONNECT {\"verbose\":false}\r\nSUB part.* 1\r\nPING\r\n"))
	require.NoError(t, err)
	br := bufio.NewReaderSize(raw, 1024)
	line := func() string {
		l, err := br.ReadString('\n')
		if err != nil {
			for _, c := range s.Connections(monitor.ConnOpen, false) {
				t.Logf("open: %+v", c)
			}
			t.Fatalf("read: %v (%d buffered)", err, br.Buffered())
		}
		return strings.TrimSuffix(l, "\r\n")
	}
	for line() != "PONG" {
	}
	const msgs, rounds = 8000, 3 // 16 MB a round: the socket fills
	payload := strings.Repeat("x", 1000)
	ic := s.InProcess("")
	nc := connect(t, s)
	// Partial writes happen when the socket fills at an inline write's
	// moment: a few rounds make one likely.
	for round := 0; round < rounds; round++ {
		go func() {
			for i := 0; i < msgs; i++ {
				ic.Publish("part.ip", "", nil, []byte(strconv.Itoa(i)+" "+payload))
			}
		}()
		go func() {
			for i := 0; i < msgs; i++ {
				_ = nc.Publish("part.net", []byte(strconv.Itoa(i)+" "+payload))
			}
			_ = nc.Flush()
		}()
		next := map[string]int{}
		_ = raw.SetReadDeadline(time.Now().Add(wait))
		for n := 0; n < 2*msgs; n++ {
			f := strings.Fields(line()) // MSG subject sid size
			if len(f) != 4 || f[0] != "MSG" {
				t.Fatalf("round %d, message %d: bad line %.40q after %v", round, n, f, next)
			}
			body := line()
			seq, _, _ := strings.Cut(body, " ")
			if want := strconv.Itoa(next[f[1]]); seq != want {
				t.Fatalf("round %d: %s: got message %s, want %s", round, f[1], seq, want)
			}
			next[f[1]]++
		}
	}
}

// TestOrderingInlineWriteLeftover requires the bytes a write leaves
// behind when the socket fills to go out before later messages: a
// subscriber stops reading while an in-process publisher sends one message
// at a time (each written before the next, inline where the socket was
// idle) until one stays pending, then a few more follow, and the
// subscriber must read them all in order.
func TestOrderingInlineWriteLeftover(t *testing.T) {
	s := servertest.Start(t, server.Options{MaxPending: 64 << 20})
	raw, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = raw.Close() })
	_, err = raw.Write([]byte("CONNECT {\"verbose\":false}\r\nSUB left 1\r\nPING\r\n"))
	require.NoError(t, err)
	br := bufio.NewReaderSize(raw, 64<<10)
	line := func() string {
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		return strings.TrimSuffix(l, "\r\n")
	}
	for line() != "PONG" {
	}
	pending := func() int {
		for _, c := range s.Connections(monitor.ConnOpen, false) {
			if c.NumSubs == 1 {
				return c.Pending
			}
		}
		t.Fatal("subscriber not found")
		return 0
	}
	ic := s.InProcess("")
	payload := strings.Repeat("x", 1000)
	sent := 0
	// Each message is written before the next is published, until one
	// stays pending: the socket is full.
	for full := false; !full; sent++ {
		if sent == 100000 { // 100 MB: far beyond any socket buffers
			t.Fatal("the subscriber's socket never filled")
		}
		ic.Publish("left", "", nil, []byte(strconv.Itoa(sent)+" "+payload))
		stuck := time.Now().Add(100 * time.Millisecond)
		for pending() > 0 && !full {
			full = time.Now().After(stuck)
			runtime.Gosched()
		}
	}
	for end := sent + 100; sent < end; sent++ {
		ic.Publish("left", "", nil, []byte(strconv.Itoa(sent)+" "+payload))
	}
	_ = raw.SetReadDeadline(time.Now().Add(wait))
	for i := 0; i < sent; i++ {
		if f := strings.Fields(line()); len(f) != 4 || f[0] != "MSG" {
			t.Fatalf("message %d of %d: bad line %.40q", i, sent, f)
		}
		if seq, _, _ := strings.Cut(line(), " "); seq != strconv.Itoa(i) {
			t.Fatalf("got message %.20q, want %d", seq, i)
		}
	}
}

// TestInlineFanoutStuckSubscriber publishes over a network connection to
// four subscribers, one of which never reads: the read loop writes a
// small fan-out itself (maxInlineFanout), with one non-blocking write per
// subscriber, so the stuck one must not hold up the publisher or the
// other three, which receive every message in order, and the stuck one is
// cut off as a slow consumer once its backlog passes MaxPending.
func TestInlineFanoutStuckSubscriber(t *testing.T) {
	s := servertest.Start(t, server.Options{MaxPending: 2 << 20})
	stuck := servertest.Dial(t, s)
	stuck.Connect(`{"verbose":false}`)
	stuck.Send("SUB fan 1\r\nPING\r\n")
	stuck.Expect("PONG")
	const msgs = 20000 // 20 MB: far beyond the stuck one's socket buffers and MaxPending
	payload := strings.Repeat("x", 1000)
	var wg sync.WaitGroup
	for range 3 {
		sub := servertest.Dial(t, s)
		sub.Connect(`{"verbose":false}`)
		sub.Send("SUB fan 1\r\nPING\r\n")
		sub.Expect("PONG")
		wg.Go(func() {
			for i := range msgs {
				if f := strings.Fields(sub.ReadLine()); len(f) != 4 || f[0] != "MSG" {
					t.Errorf("message %d: bad line %q", i, f)
					return
				}
				if seq, _, _ := strings.Cut(sub.ReadLine(), " "); seq != strconv.Itoa(i) {
					t.Errorf("got message %.20q, want %d", seq, i)
					return
				}
			}
		})
	}
	pub := servertest.Dial(t, s)
	pub.Connect(`{"verbose":false}`)
	var batch strings.Builder
	for i := range msgs {
		body := strconv.Itoa(i) + " " + payload
		fmt.Fprintf(&batch, "PUB fan %d\r\n%s\r\n", len(body), body)
		if i%100 == 99 {
			pub.Send(batch.String())
			batch.Reset()
		}
	}
	pub.Send("PING\r\n")
	pub.Expect("PONG")
	wg.Wait()
	stuck.ExpectClosed()
}
