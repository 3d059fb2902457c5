package node

import (
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf"
)

// acceptLocal is the leaf listener's leaf.AcceptLocal over the Broker. Its
// connections are not in the links' leafConns set: a solicited link
// announces the interest of attached leafs to its hub (queue groups as
// queue interest, with the leaf's weight), as nats-server's spoke does for
// leafs it is the hub of.
type acceptLocal struct {
	broker Broker
	byConn sync.Map // Conn → *acceptConn
}

var _ leaf.AcceptLocal = (*acceptLocal)(nil)

// Connect implements leaf.AcceptLocal: a no-echo combined in-process
// connection, which gets each message once for all its subscriptions.
func (a *acceptLocal) Connect(account string, deliver func(leaf.Delivery)) (leaf.AcceptConn, error) {
	c := a.broker.ConnectCombined(account, func(m leaf.Msg, plain bool, queues []string) {
		deliver(leaf.Delivery{Msg: m, Plain: plain, Queues: queues})
	})
	ac := &acceptConn{c: c, owner: a}
	a.byConn.Store(c, ac)
	return ac, nil
}

// WatchInterest implements leaf.AcceptLocal.
func (a *acceptLocal) WatchInterest(account string, fn func(leaf.AcceptInterest)) ([]leaf.AcceptInterest, func()) {
	conv := func(ev InterestEvent) leaf.AcceptInterest {
		out := leaf.AcceptInterest{Interest: leaf.Interest{Subject: ev.Subject, Queue: ev.Queue, Added: ev.Added}}
		if ev.Origin != nil {
			if c, ok := a.byConn.Load(ev.Origin); ok {
				out.From = c.(*acceptConn)
			}
		}
		return out
	}
	existing, cancel := a.broker.WatchInterest(account, func(ev InterestEvent) { fn(conv(ev)) })
	out := make([]leaf.AcceptInterest, len(existing))
	for i, ev := range existing {
		out[i] = conv(ev)
	}
	return out, cancel
}

// acceptConn is an attached leaf's in-process connection.
type acceptConn struct {
	c     Conn
	owner *acceptLocal
}

var _ leaf.AcceptConn = (*acceptConn)(nil)

// Subscribe implements leaf.AcceptConn.
func (c *acceptConn) Subscribe(subj, queue string) (leaf.Subscription, error) {
	return c.c.Subscribe(subj, queue, nil)
}

// PublishQueues implements leaf.QueueFilterPublisher.
func (c *acceptConn) PublishQueues(route, shown, reply []byte, queues [][]byte, hdr, data []byte) {
	c.c.PublishQueues(route, shown, reply, queues, hdr, data)
}

// Close implements leaf.AcceptConn.
func (c *acceptConn) Close() {
	c.c.Close()
	c.owner.byConn.Delete(c.c)
}

// acceptedLeafInfo maps an attached leaf to its /leafz entry.
func acceptedLeafInfo(st leaf.AcceptedStatus, subs bool) monitor.LeafInfo {
	li := monitor.LeafInfo{
		ID:          st.ID,
		Name:        st.Name,
		Account:     st.Account,
		InMsgs:      st.InMsgs,
		OutMsgs:     st.OutMsgs,
		InBytes:     st.InBytes,
		OutBytes:    st.OutBytes,
		NumSubs:     uint32(len(st.Subjects)),
		Compression: st.Compression,
	}
	if st.RTT > 0 {
		li.RTT = st.RTT.String()
	}
	if subs {
		li.Subs = slices.Clone(st.Subjects)
	}
	if host, port, err := net.SplitHostPort(st.RemoteAddr); err == nil {
		li.IP = host
		li.Port, _ = strconv.Atoi(port)
	}
	return li
}
