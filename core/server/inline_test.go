package server_test

import (
	"bytes"
	"fmt"
	"net"
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
