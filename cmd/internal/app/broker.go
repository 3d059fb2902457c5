package app

import (
	"sync"
	"sync/atomic"

	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/node"
)

// broker adapts *server.Server to node.Broker. It knows the connections
// it handed out, so that interest events name them as their origin.
type broker struct {
	srv   *server.Server
	conns sync.Map // *server.Conn → *brokerConn
	// ping is the node's PING hook (OnPing); the MQTT listener runs it
	// to make its captured publishes durable (syncCaptures).
	ping atomic.Pointer[func()]
}

// syncCaptures runs the PING hook, if the node set one.
func (b *broker) syncCaptures() {
	if f := b.ping.Load(); f != nil {
		(*f)()
	}
}

var _ node.Broker = (*broker)(nil)

// Connect implements node.Broker.
func (b *broker) Connect(account string) node.Conn {
	c := b.srv.InProcess(account)
	c.SetNoEcho()
	return b.track(c)
}

// ConnectCombined implements node.Broker.
func (b *broker) ConnectCombined(account string, deliver func(m leaf.Msg, plain bool, queues []string)) node.Conn {
	c := b.srv.InProcessCombined(account, func(m server.Msg, plain bool, queues []string) {
		deliver(leafMsg(m), plain, queues)
	})
	c.SetNoEcho()
	return b.track(c)
}

func (b *broker) track(c *server.Conn) *brokerConn {
	bc := &brokerConn{owner: b, c: c}
	b.conns.Store(c, bc)
	return bc
}

// WatchInterest implements node.Broker.
func (b *broker) WatchInterest(account string, fn func(node.InterestEvent)) ([]node.InterestEvent, func()) {
	existing, cancel := b.srv.WatchInterest(account, func(ev server.InterestEvent) { fn(b.event(ev)) })
	out := make([]node.InterestEvent, len(existing))
	for i, ev := range existing {
		out[i] = b.event(ev)
	}
	return out, cancel
}

// event converts ev, naming its origin when this broker handed it out.
func (b *broker) event(ev server.InterestEvent) node.InterestEvent {
	out := node.InterestEvent{Subject: ev.Subject, Queue: ev.Queue, Added: ev.Added}
	if ev.Origin != nil {
		if c, ok := b.conns.Load(ev.Origin); ok {
			out.Origin = c.(*brokerConn)
		}
	}
	return out
}

// OnPing implements node.Broker.
func (b *broker) OnPing(fn func()) {
	if fn == nil {
		b.ping.Store(nil)
	} else {
		b.ping.Store(&fn)
	}
	b.srv.OnPing(fn)
}

// brokerConn is an in-process connection handed to the node.
type brokerConn struct {
	owner *broker
	c     *server.Conn
}

// Subscribe implements node.Conn.
func (bc *brokerConn) Subscribe(subj, queue string, h func(leaf.Msg)) (leaf.Subscription, error) {
	var mh server.MsgHandler
	if h != nil {
		mh = func(m server.Msg) { h(leafMsg(m)) }
	}
	sub, err := bc.c.Subscribe(subj, queue, mh)
	if err != nil {
		return nil, err
	}
	return sub, nil
}

// Publish implements node.Conn.
func (bc *brokerConn) Publish(subj, reply string, hdr, data []byte) int {
	return bc.c.Publish(subj, reply, hdr, data)
}

// PublishAs implements node.Conn.
func (bc *brokerConn) PublishAs(route, shown, reply, hdr, data []byte) {
	bc.c.PublishBytes(route, shown, reply, hdr, data)
}

// PublishQueues implements node.Conn.
func (bc *brokerConn) PublishQueues(route, shown, reply []byte, queues [][]byte, hdr, data []byte) {
	bc.c.PublishQueuesBytes(route, shown, reply, queues, hdr, data)
}

// Close implements node.Conn. The connection is forgotten only after its
// subscriptions are gone, so their removal still names it.
func (bc *brokerConn) Close() {
	bc.c.Close()
	bc.owner.conns.Delete(bc.c)
}

// leafMsg is m as the leaf package sees it.
func leafMsg(m server.Msg) leaf.Msg {
	return leaf.Msg{Subject: m.Subject, Route: m.Route, Reply: m.Reply, Header: m.Header, Data: m.Data}
}
