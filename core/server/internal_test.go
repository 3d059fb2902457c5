package server_test

import (
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

func TestInProcessConn(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	ic := s.InProcess("")
	t.Cleanup(ic.Close)
	got := make(chan string, 4)
	sub, err := ic.Subscribe("svc.>", "", func(m server.Msg) {
		got <- string(m.Subject) + "|" + string(m.Data) + "|" + string(m.Header)
		if len(m.Reply) > 0 {
			ic.Publish(string(m.Reply), "", nil, []byte("pong"))
		}
	})
	require.NoError(t, err)
	if _, err := ic.Subscribe("bad..subject", "", func(server.Msg) {}); err == nil {
		t.Fatal("invalid subject accepted")
	}

	nc := connect(t, s)
	require.NoError(t, nc.Publish("svc.a", []byte("x")))
	if v := <-got; v != "svc.a|x|" {
		t.Fatalf("handler got %q", v)
	}
	msg := nats.NewMsg("svc.h")
	msg.Header.Set("K", "V")
	require.NoError(t, nc.PublishMsg(msg))
	if v := <-got; v != "svc.h||NATS/1.0\r\nK: V\r\n\r\n" {
		t.Fatalf("handler got %q", v)
	}
	// A request answered in-process counts as a responder.
	reply, err := nc.Request("svc.ping", nil, wait)
	require.NoError(t, err)
	if string(reply.Data) != "pong" {
		t.Fatalf("reply %q", reply.Data)
	}
	<-got

	// In-process publish reaches clients, under the shown subject.
	inbox, _ := nc.SubscribeSync("deliver.abc")
	require.NoError(t, nc.Flush())
	if !ic.HasInterest("deliver.abc") || ic.HasInterest("deliver.other") {
		t.Fatal("HasInterest wrong")
	}
	if n := ic.PublishAs("deliver.abc", "orders.1", "$JS.ACK.x", []byte("NATS/1.0\r\nA: b\r\n\r\n"), []byte("body")); n != 1 {
		t.Fatalf("delivered to %d", n)
	}
	m := nextMsg(t, inbox)
	if m.Subject != "orders.1" || m.Reply != "$JS.ACK.x" || string(m.Data) != "body" || m.Header.Get("A") != "b" {
		t.Fatalf("got %q %q %q %v", m.Subject, m.Reply, m.Data, m.Header)
	}

	sub.Unsubscribe()
	sub.Unsubscribe()
	if _, err := nc.Request("svc.ping", nil, wait); err != nats.ErrNoResponders {
		t.Fatalf("after unsubscribe: %v", err)
	}
}

func TestWatchInterestAndNoEcho(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	nc := connect(t, s)
	_, _ = nc.SubscribeSync("before.>")
	require.NoError(t, nc.Flush())

	events := make(chan server.InterestEvent, 16)
	existing, cancel := s.WatchInterest("", func(ev server.InterestEvent) { events <- ev })
	defer cancel()
	if len(existing) != 1 || existing[0].Subject != "before.>" || !existing[0].Added || existing[0].Origin != nil {
		t.Fatalf("snapshot %+v", existing)
	}
	sub, _ := nc.QueueSubscribeSync("after", "q")
	require.NoError(t, nc.Flush())
	if ev := <-events; ev.Subject != "after" || ev.Queue != "q" || !ev.Added {
		t.Fatalf("add event %+v", ev)
	}
	require.NoError(t, sub.Unsubscribe())
	require.NoError(t, nc.Flush())
	if ev := <-events; ev.Subject != "after" || ev.Added {
		t.Fatalf("remove event %+v", ev)
	}

	// An in-process connection with no echo does not hear itself, and its
	// subscriptions are reported with it as origin.
	ic := s.InProcess("")
	ic.SetNoEcho()
	t.Cleanup(ic.Close)
	heard := 0
	_, err := ic.Subscribe("loop", "", func(server.Msg) { heard++ })
	require.NoError(t, err)
	if ev := <-events; ev.Origin != ic || ev.Subject != "loop" {
		t.Fatalf("in-process event %+v", ev)
	}
	if n := ic.Publish("loop", "", nil, nil); n != 0 || heard != 0 {
		t.Fatalf("no-echo connection heard itself: %d deliveries", n)
	}
	other := s.InProcess("")
	t.Cleanup(other.Close)
	if n := other.Publish("loop", "", nil, nil); n != 1 || heard != 1 {
		t.Fatalf("another connection's publish: %d deliveries, heard %d", n, heard)
	}
}

func TestPublishQueues(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	nc := connect(t, s)
	plain, _ := nc.SubscribeSync("q.s")
	named, _ := nc.QueueSubscribeSync("q.s", "named")
	other, _ := nc.QueueSubscribeSync("q.s", "other")
	require.NoError(t, nc.Flush())
	ic := s.InProcess("")
	t.Cleanup(ic.Close)
	if n := ic.PublishQueues("q.s", "q.s", "", [][]byte{[]byte("named")}, nil, []byte("1")); n != 2 {
		t.Fatalf("delivered %d, want plain + named", n)
	}
	if n := ic.PublishQueues("q.s", "q.s", "", nil, nil, []byte("2")); n != 1 {
		t.Fatalf("delivered %d, want plain only", n)
	}
	for _, want := range []string{"1", "2"} {
		if m := nextMsg(t, plain); string(m.Data) != want {
			t.Fatalf("plain got %q", m.Data)
		}
	}
	if m := nextMsg(t, named); string(m.Data) != "1" {
		t.Fatalf("named got %q", m.Data)
	}
	expectNone(t, nc, named, other)
}

func TestSubszListsInProcessSubscriptions(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	ic := s.InProcess("")
	t.Cleanup(ic.Close)
	if _, err := ic.Subscribe("$JS.API.>", "", func(server.Msg) {}); err != nil {
		t.Fatal(err)
	}
	nc := connect(t, s)
	_, _ = nc.SubscribeSync("client.sub")
	require.NoError(t, nc.Flush())
	got := map[string]uint64{}
	for _, d := range s.Subscriptions("") {
		got[d.Subject] = d.Cid
	}
	if cid, ok := got["$JS.API.>"]; !ok || cid != 0 {
		t.Fatalf("in-process subscription: %v", got)
	}
	if cid, ok := got["client.sub"]; !ok || cid == 0 {
		t.Fatalf("client subscription: %v", got)
	}
}
