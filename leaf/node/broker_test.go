package node

import (
	"bytes"
	"sync"

	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf"
)

// testBroker is a Broker over a real *server.Server for the tests, as
// cmd/internal/app's adapter is for the binary.
type testBroker struct {
	srv   *server.Server
	conns sync.Map // *server.Conn → *testConn
}

var _ Broker = (*testBroker)(nil)

func (b *testBroker) Connect(account string) Conn {
	c := b.srv.InProcess(account)
	c.SetNoEcho()
	tc := &testConn{owner: b, c: c}
	b.conns.Store(c, tc)
	return tc
}

func (b *testBroker) ConnectCombined(account string, deliver func(m leaf.Msg, plain bool, queues []string)) Conn {
	c := b.srv.InProcessCombined(account, func(m server.Msg, plain bool, queues []string) { deliver(leafMsg(m), plain, queues) })
	c.SetNoEcho()
	tc := &testConn{owner: b, c: c}
	b.conns.Store(c, tc)
	return tc
}

func (b *testBroker) WatchInterest(account string, fn func(InterestEvent)) ([]InterestEvent, func()) {
	conv := func(ev server.InterestEvent) InterestEvent {
		out := InterestEvent{Subject: ev.Subject, Queue: ev.Queue, Added: ev.Added}
		if c, ok := b.conns.Load(ev.Origin); ok && ev.Origin != nil {
			out.Origin = c.(*testConn)
		}
		return out
	}
	existing, cancel := b.srv.WatchInterest(account, func(ev server.InterestEvent) { fn(conv(ev)) })
	out := make([]InterestEvent, len(existing))
	for i, ev := range existing {
		out[i] = conv(ev)
	}
	return out, cancel
}

func (b *testBroker) OnPing(fn func()) { b.srv.OnPing(fn) }

type testConn struct {
	owner *testBroker
	c     *server.Conn
}

func (tc *testConn) Subscribe(subj, queue string, h func(leaf.Msg)) (leaf.Subscription, error) {
	var mh server.MsgHandler
	if h != nil {
		mh = func(m server.Msg) { h(leafMsg(m)) }
	}
	return tc.c.Subscribe(subj, queue, mh)
}

func (tc *testConn) Publish(subj, reply string, hdr, data []byte) int {
	return tc.c.Publish(subj, reply, hdr, data)
}

func (tc *testConn) PublishAs(route, shown, reply, hdr, data []byte) {
	tc.c.PublishAs(string(route), string(shown), string(reply), hdr, data)
}

func (tc *testConn) PublishQueues(route, shown, reply []byte, queues [][]byte, hdr, data []byte) {
	s := string(route)
	if !bytes.Equal(route, shown) {
		s = string(shown)
	}
	tc.c.PublishQueues(string(route), s, string(reply), queues, hdr, data)
}

func (tc *testConn) Close() {
	tc.c.Close()
	tc.owner.conns.Delete(tc.c)
}

// leafMsg is m as the leaf package sees it.
func leafMsg(m server.Msg) leaf.Msg {
	return leaf.Msg{Subject: m.Subject, Route: m.Route, Reply: m.Reply, Header: m.Header, Data: m.Data}
}
