package server_test

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

func TestSlowConsumerCutOff(t *testing.T) {
	s := servertest.Start(t, server.Options{MaxPending: 1 << 20, MaxPayload: 64 << 10})
	// The slow client subscribes and then never reads; its small receive
	// window keeps the kernel from absorbing much.
	conn, err := net.Dial("tcp", s.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(4096))
	_, err = conn.Write([]byte("CONNECT {\"verbose\":false}\r\nSUB data 1\r\nPING\r\n"))
	require.NoError(t, err)

	fast := connect(t, s)
	var got atomic.Int64
	done := make(chan struct{})
	const n = 8 << 10 // 8 MiB in all
	_, err = fast.Subscribe("data", func(*nats.Msg) {
		if got.Add(1) == n {
			close(done)
		}
	})
	require.NoError(t, err)
	require.NoError(t, fast.Flush())

	pub := connect(t, s)
	payload := make([]byte, 1024)
	for i := 0; i < n; i++ {
		require.NoError(t, pub.Publish("data", payload))
	}
	require.NoError(t, pub.Flush())
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("fast subscriber got %d of %d", got.Load(), n)
	}
	if v := s.Varz(); v.SlowConsumers != 1 {
		t.Errorf("slow_consumers = %d, want 1", v.SlowConsumers)
	}
	closed := s.Connections(monitor.ConnClosed, false)
	if len(closed) != 1 || closed[0].Reason != "Slow Consumer (Pending Bytes)" {
		t.Fatalf("closed connections: %+v", closed)
	}
	if !fast.IsConnected() || !pub.IsConnected() {
		t.Fatal("healthy clients were cut off")
	}
}

func TestStaleConnection(t *testing.T) {
	s := servertest.Start(t, server.Options{PingInterval: 30 * time.Millisecond, MaxPingsOut: 2})
	c := servertest.Dial(t, s)
	c.Connect(`{"verbose":false,"pedantic":false}`)
	c.Expect("PING")
	c.Expect("PING")
	c.Expect("-ERR 'Stale Connection'")
	c.ExpectClosed()
	// A client that answers stays.
	ok := servertest.Dial(t, s)
	ok.Connect(`{"verbose":false,"pedantic":false}`)
	for i := 0; i < 4; i++ {
		ok.Expect("PING")
		ok.Send("PONG\r\n")
	}
}

func TestMaxConnections(t *testing.T) {
	s := servertest.Start(t, server.Options{MaxConnections: 1})
	first := servertest.Dial(t, s)
	first.Connect(`{"verbose":false,"pedantic":false}`)
	second := servertest.Dial(t, s)
	second.Expect("INFO ")
	second.Expect("-ERR 'maximum connections exceeded'")
	second.ExpectClosed()
}

func TestReload(t *testing.T) {
	opts := server.Options{Auth: &auth.Config{Users: []auth.User{
		{Name: "keep", Password: "k"},
		{Name: "drop", Password: "d"},
		{Name: "narrow", Password: "n"},
	}}}
	s := servertest.Start(t, opts)
	keep := connect(t, s, nats.UserInfo("keep", "k"))
	dropped := make(chan struct{})
	connect(t, s, nats.UserInfo("drop", "d"), nats.NoReconnect(), nats.ClosedHandler(func(*nats.Conn) { close(dropped) }))
	errs := make(chan error, 4)
	narrow := connect(t, s, nats.UserInfo("narrow", "n"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) { errs <- err }))
	wide, _ := narrow.SubscribeSync("x.y")
	kept, _ := narrow.SubscribeSync("a.b")
	require.NoError(t, narrow.Flush())

	opts.Auth = &auth.Config{Users: []auth.User{
		{Name: "keep", Password: "k"},
		{Name: "drop", Password: "changed"},
		{Name: "narrow", Password: "n", Permissions: &auth.Permissions{Subscribe: &auth.SubjectPermission{Allow: []string{"a.>"}}}},
	}}
	opts.Host, opts.Port = "127.0.0.1", server.RandomPort
	require.NoError(t, s.Reload(opts))
	select {
	case <-dropped:
	case <-time.After(wait):
		t.Fatal("client with revoked credentials stayed connected")
	}
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), `Subscription to "x.y"`) {
			t.Fatalf("got %v", err)
		}
	case <-time.After(wait):
		t.Fatal("no violation for the subscription the reload denied")
	}
	require.NoError(t, keep.Publish("x.y", []byte("1")))
	require.NoError(t, keep.Publish("a.b", []byte("2")))
	if m := nextMsg(t, kept); string(m.Data) != "2" {
		t.Fatalf("kept subscription got %q", m.Data)
	}
	expectNone(t, narrow, wide)
	if !keep.IsConnected() || !narrow.IsConnected() {
		t.Fatal("reload dropped clients whose credentials still hold")
	}
	// Changing the listen address needs a restart.
	bad := opts
	bad.Host = "0.0.0.0"
	if err := s.Reload(bad); err == nil {
		t.Fatal("reload accepted a new listen address")
	}
}

func TestLameDuck(t *testing.T) {
	s := servertest.Start(t, server.Options{LameDuckGracePeriod: 20 * time.Millisecond, LameDuckDuration: 100 * time.Millisecond})
	ldm := make(chan struct{}, 3)
	closed := make(chan struct{}, 3)
	for i := 0; i < 3; i++ {
		connect(t, s, nats.NoReconnect(),
			nats.LameDuckModeHandler(func(*nats.Conn) { ldm <- struct{}{} }),
			nats.ClosedHandler(func(*nats.Conn) { closed <- struct{}{} }))
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.LameDuck(ctx) }()
	for i := 0; i < 3; i++ {
		select {
		case <-ldm:
		case <-time.After(wait):
			t.Fatal("client not told of lame duck mode")
		}
	}
	if _, err := net.DialTimeout("tcp", s.Addr().String(), time.Second); err == nil {
		t.Fatal("lame duck server still accepts connections")
	}
	for i := 0; i < 3; i++ {
		select {
		case <-closed:
		case <-time.After(wait):
			t.Fatal("lame duck server did not close its clients")
		}
	}
	require.NoError(t, <-done)
}
