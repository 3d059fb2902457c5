package node

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf"
)

// remote is one leafnode remote with the link that serves it.
type remote struct {
	link  *leaf.Link
	local *linkLocal
	varz  monitor.RemoteLeafVarz // the remote as /varz lists it
}

// newRemote builds the link of remote i, which connects once started.
// lc holds the loop-prevention denies already; operatorDeny says whether
// the operator configured deny lists (then /varz shows them).
func newRemote(i int, r RemoteConfig, operatorDeny bool, b Broker, leafs *leafConns, n *Node) (*remote, error) {
	lc := r.Link
	lc.ServerID = n.cfg.ServerID
	local := &linkLocal{broker: b, leafs: leafs, open: map[*linkConn]struct{}{}}
	link, err := leaf.New(lc, local, n.log.With("subsystem", "leaf", "remote", i))
	if err != nil {
		return nil, fmt.Errorf("leafnode remote %d: %w", i, err)
	}
	account := lc.Account
	if account == "" {
		account = auth.GlobalAccount
	}
	v := monitor.RemoteLeafVarz{LocalAccount: account, URLs: slices.Clone(r.ShownURLs)}
	if operatorDeny {
		v.Deny = &monitor.DenyRules{Imports: lc.DenyImports, Exports: lc.DenyExports}
	}
	return &remote{link: link, local: local, varz: v}, nil
}

// closeRemotes closes the links, all at once, and waits for them or for
// ctx. Closing a link that is closed already does nothing.
func closeRemotes(ctx context.Context, rs []*remote) error {
	if len(rs) == 0 {
		return nil
	}
	done := make(chan struct{})
	go func() {
		var wg sync.WaitGroup
		for _, r := range rs {
			wg.Go(func() { _ = r.link.Close() })
		}
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("leafnodes: %w", ctx.Err())
	}
}

// linkLocal is one link's leaf.Local over the Broker. It keeps the link's
// open connections so that /leafz can list the link's subscriptions, and
// registers them in the node's leafConns.
//
// linkLocal.mu and linkConn.mu are never held together, nor while calling
// the broker; the interest callback, which runs under the broker's locks,
// takes neither.
type linkLocal struct {
	broker Broker
	leafs  *leafConns

	mu   sync.Mutex
	open map[*linkConn]struct{}
}

var _ leaf.Local = (*linkLocal)(nil)

// Connect implements leaf.Local: a no-echo in-process connection that the
// leafConns set knows.
func (l *linkLocal) Connect(account string) (leaf.LocalConn, error) {
	c := l.broker.Connect(account)
	lc := &linkConn{owner: l, c: c, subs: map[*linkSub]struct{}{}}
	l.leafs.add(c)
	l.mu.Lock()
	l.open[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

// WatchInterest implements leaf.Local: interest of any link's connection
// is marked Leaf.
func (l *linkLocal) WatchInterest(account string, fn func(leaf.Interest)) ([]leaf.Interest, func()) {
	conv := func(ev InterestEvent) leaf.Interest {
		return leaf.Interest{Subject: ev.Subject, Queue: ev.Queue, Added: ev.Added, Leaf: l.leafs.has(ev.Origin)}
	}
	existing, cancel := l.broker.WatchInterest(account, func(ev InterestEvent) { fn(conv(ev)) })
	out := make([]leaf.Interest, len(existing))
	for i, ev := range existing {
		out[i] = conv(ev)
	}
	return out, cancel
}

// subjects returns the sorted subjects the link subscribes to locally on
// behalf of its hub.
func (l *linkLocal) subjects() []string {
	l.mu.Lock()
	open := make([]*linkConn, 0, len(l.open))
	for lc := range l.open {
		open = append(open, lc)
	}
	l.mu.Unlock()
	var out []string
	for _, lc := range open {
		lc.mu.Lock()
		for s := range lc.subs {
			out = append(out, s.subject)
		}
		lc.mu.Unlock()
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// linkConn is a link's in-process connection. Besides leaf.LocalConn it
// implements leaf.QueueFilterPublisher, so hub messages reach only the
// queue groups the hub named.
type linkConn struct {
	owner *linkLocal
	c     Conn

	mu   sync.Mutex
	subs map[*linkSub]struct{}
}

var (
	_ leaf.LocalConn            = (*linkConn)(nil)
	_ leaf.QueueFilterPublisher = (*linkConn)(nil)
)

// Subscribe implements leaf.LocalConn.
func (lc *linkConn) Subscribe(subj string, h func(leaf.Msg)) (leaf.Subscription, error) {
	sub, err := lc.c.Subscribe(subj, "", h)
	if err != nil {
		return nil, err
	}
	s := &linkSub{conn: lc, sub: sub, subject: subj}
	lc.mu.Lock()
	lc.subs[s] = struct{}{}
	lc.mu.Unlock()
	return s, nil
}

// Publish implements leaf.LocalConn.
func (lc *linkConn) Publish(route, shown, reply, hdr, data []byte) {
	lc.c.PublishAs(route, shown, reply, hdr, data)
}

// PublishQueues implements leaf.QueueFilterPublisher.
func (lc *linkConn) PublishQueues(route, shown, reply []byte, queues [][]byte, hdr, data []byte) {
	lc.c.PublishQueues(route, shown, reply, queues, hdr, data)
}

// Close implements leaf.LocalConn. The connection leaves the leafConns set
// only after its subscriptions are gone, so their removal is still seen
// as a link's.
func (lc *linkConn) Close() {
	lc.c.Close()
	lc.owner.leafs.remove(lc.c)
	lc.owner.mu.Lock()
	delete(lc.owner.open, lc)
	lc.owner.mu.Unlock()
	lc.mu.Lock()
	clear(lc.subs)
	lc.mu.Unlock()
}

// linkSub is a subscription of a linkConn.
type linkSub struct {
	conn    *linkConn
	sub     leaf.Subscription
	subject string
}

// Unsubscribe implements leaf.Subscription; it is idempotent.
func (s *linkSub) Unsubscribe() {
	s.sub.Unsubscribe()
	s.conn.mu.Lock()
	delete(s.conn.subs, s)
	s.conn.mu.Unlock()
}
