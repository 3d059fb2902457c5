//go:build !race

// The race detector allocates on its own, so allocation budgets are
// checked in normal builds only.

package leaf_test

import (
	"bytes"
	"context"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// queueLocal is serverLocal whose connections also filter hub messages by
// the queue groups the hub named, over the byte publish path, as
// cmd/internal/app's adapter does.
type queueLocal struct{ *serverLocal }

type queueConn struct{ *localConn }

func (q queueLocal) Connect(account string) (leaf.LocalConn, error) {
	lc, err := q.serverLocal.Connect(account)
	if err != nil {
		return nil, err
	}
	return queueConn{lc.(*localConn)}, nil
}

func (q queueConn) PublishQueues(route, shown, reply []byte, queues [][]byte, hdr, data []byte) {
	q.c.PublishQueuesBytes(route, shown, reply, queues, hdr, data)
}

// rawSubscriber connects a raw client to srv that sends subs (SUB lines),
// waits until they are in place, and counts the bytes it receives on a
// goroutine that allocates nothing.
func rawSubscriber(t *testing.T, srv *server.Server, subs string) (received func() int64) {
	t.Helper()
	c, err := net.Dial("tcp", srv.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	_, err = c.Write([]byte("CONNECT {\"verbose\":false,\"pedantic\":false}\r\n" + subs + "PING\r\n"))
	require.NoError(t, err)
	var pre [4096]byte
	var seen []byte
	for !bytes.Contains(seen, []byte("PONG\r\n")) {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(wait)))
		n, err := c.Read(pre[:])
		require.NoError(t, err)
		seen = append(seen, pre[:n]...)
	}
	require.NoError(t, c.SetReadDeadline(time.Time{}))
	counts := make(chan int64, 1)
	counts <- 0
	go func() {
		buf := make([]byte, 64<<10)
		for {
			n, err := c.Read(buf)
			total := <-counts
			counts <- total + int64(n)
			if err != nil {
				return
			}
		}
	}()
	return func() int64 { v := <-counts; counts <- v; return v }
}

// TestHubToLocalAllocs requires hub → local delivery to allocate nothing
// per message once warm: LMSGs from a scripted hub, read by a real link,
// published through the in-process connection into a real broker and
// written to a raw subscriber. The mix covers a plain message, one with a
// reply, a JetStream push delivery (routed by the deliver subject, shown
// under the stream subject after '@') and a queue group the hub named.
func TestHubToLocalAllocs(t *testing.T) {
	srv := servertest.Start(t, server.Options{})
	received := rawSubscriber(t, srv, "SUB hub.temp 1\r\nSUB deliver.x 2\r\nSUB work g 3\r\n")
	fake := leaftest.StartFakeHub(t)
	link, err := leaf.New(testConfig(fake.URL()), queueLocal{newServerLocal(srv)}, nil)
	require.NoError(t, err)
	require.NoError(t, link.Start(context.Background()))
	t.Cleanup(func() { _ = link.Close() })
	hub := fake.Accept()
	hub.Handshake()
	for !strings.HasPrefix(hub.ReadLine(), "LS+ $LDS.") { // the local interest, then our loop subject
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	require.NoError(t, link.WaitConnected(ctx))

	const payload = "0123456789abcdef"
	const ack = "$JS.ACK.ORDERS.c1.1.5.5.1700000000.0"
	in := "LMSG hub.temp 16\r\n" + payload + "\r\n" +
		"LMSG hub.temp reply.1 16\r\n" + payload + "\r\n" +
		"LMSG deliver.x " + ack + "@orders.eu.1 16\r\n" + payload + "\r\n" +
		"LMSG work | g 16\r\n" + payload + "\r\n"
	out := "MSG hub.temp 1 16\r\n" + payload + "\r\n" +
		"MSG hub.temp 1 reply.1 16\r\n" + payload + "\r\n" +
		"MSG orders.eu.1 2 " + ack + " 16\r\n" + payload + "\r\n" +
		"MSG work 3 16\r\n" + payload + "\r\n"
	const kinds, repeat = 4, 250
	burst := strings.Repeat(in, repeat)
	perBurst := int64(len(out) * repeat)

	var want int64
	run := func(rounds int) {
		for range rounds {
			hub.Send(burst)
			want += perBurst
			// A spin on the byte counter, not a wait on a signal: a
			// channel or lock in the counting writer would be measured
			// with the path. The deadline bounds it.
			deadline := time.Now().Add(wait)
			for received() < want {
				if time.Now().After(deadline) {
					t.Fatalf("received %d of %d bytes", received(), want)
				}
				runtime.Gosched()
			}
		}
	}
	run(20) // warm up buffers and the match cache
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const rounds = 200
	run(rounds)
	runtime.ReadMemStats(&after)
	if received() != want {
		t.Fatalf("received %d bytes, want exactly %d", received(), want)
	}
	msgs := float64(rounds * kinds * repeat)
	perMsg := float64(after.Mallocs-before.Mallocs) / msgs
	t.Logf("%.4f allocations per message over %.0f messages", perMsg, msgs)
	// Sending a burst converts it once (1 per 1000 messages), and timers
	// and the runtime allocate a little now and then; a per-message
	// allocation would show as ≥ 1.
	if perMsg > 0.01 {
		t.Fatalf("hub → local delivery allocates %.4f times per message", perMsg)
	}
}
