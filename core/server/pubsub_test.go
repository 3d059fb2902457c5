package server_test

import (
	"errors"
	"fmt"
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

const wait = servertest.Timeout

func connect(t *testing.T, s *server.Server, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func nextMsg(t *testing.T, sub *nats.Subscription) *nats.Msg {
	t.Helper()
	m, err := sub.NextMsg(wait)
	if err != nil {
		t.Fatalf("next message on %q: %v", sub.Subject, err)
	}
	return m
}

// expectNone flushes a round trip through the server, after which a
// message that was going to arrive has arrived, and checks none did.
func expectNone(t *testing.T, nc *nats.Conn, subs ...*nats.Subscription) {
	t.Helper()
	require.NoError(t, nc.Flush())
	for _, sub := range subs {
		if n, _, _ := sub.Pending(); n != 0 {
			m, _ := sub.NextMsg(0)
			t.Fatalf("unexpected message on %q: %q", sub.Subject, m.Subject)
		}
	}
}

func TestPubSubWildcards(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	sub := connect(t, s)
	pub := connect(t, s)
	literal, _ := sub.SubscribeSync("orders.eu.created")
	star, _ := sub.SubscribeSync("orders.*.created")
	full, _ := sub.SubscribeSync("orders.>")
	require.NoError(t, sub.Flush())

	require.NoError(t, pub.Publish("orders.eu.created", []byte("1")))
	for _, s := range []*nats.Subscription{literal, star, full} {
		if m := nextMsg(t, s); string(m.Data) != "1" || m.Subject != "orders.eu.created" {
			t.Fatalf("%s got %q on %q", s.Subject, m.Data, m.Subject)
		}
	}
	// Non-matches: '*' is exactly one token, '>' needs at least one.
	require.NoError(t, pub.Publish("orders.eu.west.created", []byte("2")))
	if m := nextMsg(t, full); string(m.Data) != "2" {
		t.Fatalf("full wildcard got %q", m.Data)
	}
	require.NoError(t, pub.Publish("orders", []byte("3")))
	require.NoError(t, pub.Publish("order.eu.created", []byte("4")))
	require.NoError(t, pub.Flush())
	expectNone(t, sub, literal, star, full)
}

func TestQueueGroupsDeliverOnce(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	const members, msgs = 4, 2000
	var got [members]atomic.Int64
	var total atomic.Int64
	done := make(chan struct{})
	for i := 0; i < members; i++ {
		nc := connect(t, s)
		_, err := nc.QueueSubscribe("work", "workers", func(*nats.Msg) {
			got[i].Add(1)
			if total.Add(1) == msgs {
				close(done)
			}
		})
		require.NoError(t, err)
		require.NoError(t, nc.Flush())
	}
	// A plain subscriber beside the group gets every message.
	plain := connect(t, s)
	all, _ := plain.SubscribeSync("work")
	require.NoError(t, plain.Flush())

	pub := connect(t, s)
	for i := 0; i < msgs; i++ {
		require.NoError(t, pub.Publish("work", []byte(strconv.Itoa(i))))
	}
	require.NoError(t, pub.Flush())
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatalf("queue group received %d of %d", total.Load(), msgs)
	}
	for i := 0; i < msgs; i++ {
		nextMsg(t, all)
	}
	// Exactly once: after a round trip through every member, no extras.
	require.NoError(t, pub.Flush())
	if n := total.Load(); n != msgs {
		t.Fatalf("queue group received %d, want %d", n, msgs)
	}
	for i := range got {
		if got[i].Load() == 0 {
			t.Errorf("member %d received nothing of %d messages", i, msgs)
		}
	}
}

func TestRequestReplyConcurrent(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	svc := connect(t, s)
	_, err := svc.Subscribe("echo", func(m *nats.Msg) { _ = m.Respond(append([]byte("re:"), m.Data...)) })
	require.NoError(t, err)
	require.NoError(t, svc.Flush())

	nc := connect(t, s)
	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for g := 0; g < 20; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				body := fmt.Sprintf("%d-%d", g, i)
				m, err := nc.Request("echo", []byte(body), wait)
				if err != nil {
					errs <- err
					return
				}
				if string(m.Data) != "re:"+body {
					errs <- fmt.Errorf("reply %q to %q", m.Data, body)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Old-style request: SUB + UNSUB 1 on a unique inbox.
	old := connect(t, s, nats.UseOldRequestStyle())
	m, err := old.Request("echo", []byte("x"), wait)
	require.NoError(t, err)
	if string(m.Data) != "re:x" {
		t.Fatalf("old-style reply %q", m.Data)
	}
}

func TestNoResponders(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	nc := connect(t, s)
	start := time.Now()
	_, err := nc.Request("nobody.home", []byte("?"), wait)
	if !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("request with no subscriber: %v, want ErrNoResponders", err)
	}
	if time.Since(start) > wait/2 {
		t.Fatal("no-responders answer came only after the timeout")
	}
}

func TestHeaders(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	nc := connect(t, s)
	sub, _ := nc.SubscribeSync("h")
	msg := nats.NewMsg("h")
	msg.Header.Add("Trace-Id", "abc")
	msg.Header.Add("Multi", "1")
	msg.Header.Add("Multi", "2")
	msg.Data = []byte("body")
	require.NoError(t, nc.PublishMsg(msg))
	m := nextMsg(t, sub)
	if m.Header.Get("Trace-Id") != "abc" || len(m.Header.Values("Multi")) != 2 || string(m.Data) != "body" {
		t.Fatalf("headers %v data %q", m.Header, m.Data)
	}
}

func TestHeadersStrippedForOldClients(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	raw := servertest.Dial(t, s)
	raw.Connect(`{"verbose":false,"headers":false}`)
	raw.Send("SUB h 1\r\nPING\r\n")
	raw.Expect("PONG")
	nc := connect(t, s)
	msg := nats.NewMsg("h")
	msg.Header.Set("K", "V")
	msg.Data = []byte("payload")
	require.NoError(t, nc.PublishMsg(msg))
	if line := raw.Expect("MSG h 1 7"); line != "MSG h 1 7" {
		t.Fatalf("got %q", line)
	}
	raw.Expect("payload")
}

func TestMaxPayload(t *testing.T) {
	s := servertest.Start(t, server.Options{MaxPayload: 1024})
	nc := connect(t, s)
	if got := nc.MaxPayload(); got != 1024 {
		t.Fatalf("client sees max payload %d", got)
	}
	if err := nc.Publish("big", make([]byte, 2048)); !errors.Is(err, nats.ErrMaxPayload) {
		t.Fatalf("client-side check: %v", err)
	}
	// A raw client that ignores INFO gets the error and is closed; the
	// server keeps serving others.
	raw := servertest.Dial(t, s)
	raw.Connect(`{"verbose":false,"pedantic":false}`)
	raw.Send("PUB big 2048\r\n")
	raw.Expect("-ERR 'Maximum Payload Violation'")
	raw.ExpectClosed()
	require.NoError(t, nc.Flush())
}

func TestEchoOff(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	nc := connect(t, s, nats.NoEcho())
	other := connect(t, s)
	own, _ := nc.SubscribeSync("e")
	theirs, _ := other.SubscribeSync("e")
	require.NoError(t, nc.Flush())
	require.NoError(t, other.Flush())
	require.NoError(t, nc.Publish("e", []byte("mine")))
	if m := nextMsg(t, theirs); string(m.Data) != "mine" {
		t.Fatalf("other got %q", m.Data)
	}
	expectNone(t, nc, own)
	require.NoError(t, other.Publish("e", []byte("yours")))
	if m := nextMsg(t, own); string(m.Data) != "yours" {
		t.Fatalf("no-echo client missed another's message: %q", m.Data)
	}
}

func TestOrdering(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	sub := connect(t, s)
	ch := make(chan *nats.Msg, 10001)
	_, err := sub.ChanSubscribe("seq", ch)
	require.NoError(t, err)
	require.NoError(t, sub.Flush())
	pub := connect(t, s)
	const n = 10000
	for i := 0; i < n; i++ {
		require.NoError(t, pub.Publish("seq", []byte(strconv.Itoa(i))))
	}
	require.NoError(t, pub.Flush())
	for i := 0; i < n; i++ {
		select {
		case m := <-ch:
			if string(m.Data) != strconv.Itoa(i) {
				t.Fatalf("message %d is %q", i, m.Data)
			}
		case <-time.After(wait):
			t.Fatalf("received %d of %d", i, n)
		}
	}
}

func TestUnsubMax(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	raw := servertest.Dial(t, s)
	raw.Connect(`{"verbose":false,"pedantic":false}`)
	raw.Send("SUB m 1\r\nUNSUB 1 3\r\n")
	for i := 0; i < 10; i++ {
		raw.Send("PUB m 1\r\n" + strconv.Itoa(i) + "\r\n")
	}
	raw.Send("PING\r\n")
	for i := 0; i < 3; i++ {
		raw.Expect("MSG m 1 1")
		raw.Expect(strconv.Itoa(i))
	}
	raw.Expect("PONG")
	// The subscription is gone: a later publish reaches nobody.
	raw.Send("UNSUB 1\r\nPUB m 1\r\nx\r\nPING\r\n")
	raw.Expect("PONG")
}

// TestRepeatedSubjectSeesNewInterest publishes one subject over and over
// (so the publisher's match memo holds "no interest"), then subscribes on
// another connection: the first PUB sent after the SUB's PONG must be
// delivered, and after an UNSUB's PONG the next must not. The same for a
// wildcard, and for a subscriber on the publisher's own connection, whose
// SUB lands between two PUBs of one read (the memo lives for one read
// batch, so this is where a stale one would show).
func TestRepeatedSubjectSeesNewInterest(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	pub := servertest.Dial(t, s)
	pub.Connect(`{"verbose":false}`)
	sub := servertest.Dial(t, s)
	sub.Connect(`{"verbose":false}`)
	flood := func(payload string) {
		t.Helper()
		msg := "PUB sensors.temp " + strconv.Itoa(len(payload)) + "\r\n" + payload + "\r\n"
		pub.Send(strings.Repeat("PUB sensors.temp 4\r\nwarm\r\n", 100) + msg + "PING\r\n")
		pub.Expect("PONG")
	}
	for i, pattern := range []string{"sensors.temp", "sensors.*", ">"} {
		flood("before")
		sid := strconv.Itoa(i + 1)
		sub.Send("SUB " + pattern + " " + sid + "\r\nPING\r\n")
		sub.Expect("PONG")
		pub.Send("PUB sensors.temp 5\r\nafter\r\nPING\r\n")
		pub.Expect("PONG")
		sub.Expect("MSG sensors.temp " + sid + " 5")
		require.Equal(t, sub.ReadLine(), "after")
		sub.Send("UNSUB " + sid + "\r\nPING\r\n")
		sub.Expect("PONG")
		flood("gone")
		sub.Send("PING\r\n")
		sub.Expect("PONG") // no MSG came before it
	}
	// A subscription made by the publisher itself, in the same read.
	pub.Send("PUB sensors.temp 4\r\nwarm\r\nSUB sensors.temp 9\r\nPUB sensors.temp 4\r\nself\r\nPING\r\n")
	pub.Expect("MSG sensors.temp 9 4")
	require.Equal(t, pub.ReadLine(), "self")
	pub.Expect("PONG")
}

// TestMessageCounters checks the per-connection and server counters of
// /connz and /varz after PUBs in one read and in several: the in counters
// are added once per read batch, the out ones per delivery under the
// receiver's lock.
func TestMessageCounters(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	sub := servertest.Dial(t, s)
	sub.Connect(`{"verbose":false}`)
	sub.Send("SUB c.* 1\r\nSUB c.a 2\r\nPING\r\n")
	sub.Expect("PONG")
	pub := servertest.Dial(t, s)
	pub.Connect(`{"verbose":false,"name":"pub"}`)
	pub.Send("PUB c.a 3\r\nabc\r\nPUB c.b 2\r\nde\r\nPUB x 1\r\nf\r\nPING\r\n")
	pub.Expect("PONG")
	pub.Send("PUB c.a 0\r\n\r\nPING\r\n")
	pub.Expect("PONG")
	for range 5 { // c.a twice (3 B, 0 B) to sids 1 and 2, c.b once (2 B) to sid 1
		sub.Expect("MSG ")
		sub.ReadLine()
	}
	var in, out *monitor.ConnSnapshot
	for _, c := range s.Connections(monitor.ConnOpen, false) {
		if c.Name == "pub" {
			in = &c
		} else {
			out = &c
		}
	}
	if in == nil || out == nil {
		t.Fatal("connections not found")
	}
	require.Equal(t, [2]int64{in.InMsgs, in.InBytes}, [2]int64{4, 6})
	require.Equal(t, [2]int64{out.OutMsgs, out.OutBytes}, [2]int64{5, 3 + 3 + 2})
	v := s.Varz()
	require.Equal(t, [4]int64{v.InMsgs, v.InBytes, v.OutMsgs, v.OutBytes}, [4]int64{4, 6, 5, 8})
}
