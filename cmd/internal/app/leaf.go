package app

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf"
)

// uplink is one configured leafnode remote with the link that serves it.
type uplink struct {
	link  *leaf.Link
	local *linkLocal
	varz  monitor.RemoteLeafVarz // the remote as /varz lists it
}

// buildUplinks builds one link per leafnode remote of cfg over srv; they
// connect once started. cfg has been validated.
func buildUplinks(cfg *config.Config, srv *server.Server, log *slog.Logger) ([]*uplink, error) {
	if cfg.LeafNodes == nil || len(cfg.LeafNodes.Remotes) == 0 {
		return nil, nil
	}
	conns := &leafConns{}
	var ups []*uplink
	for i := range cfg.LeafNodes.Remotes {
		r := &cfg.LeafNodes.Remotes[i]
		path := fmt.Sprintf("leafnodes.remotes[%d]", i)
		lc := cfg.LeafConfig(r)
		lc.ServerID = srv.ID()
		if r.TLS != nil {
			tc, err := cfg.RemoteTLS(path+".tls", r.TLS)
			if err != nil {
				return nil, err
			}
			lc.TLS = tc
		}
		local := &linkLocal{srv: srv, conns: conns, open: map[*localConn]struct{}{}}
		link, err := leaf.New(lc, local, log.With("subsystem", "leaf", "remote", i))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		account := r.Account
		if account == "" {
			account = auth.GlobalAccount
		}
		urls := make([]string, 0, len(lc.URLs))
		for _, u := range lc.URLs {
			urls = append(urls, config.RedactURL(u))
		}
		v := monitor.RemoteLeafVarz{LocalAccount: account, URLs: urls}
		if len(r.DenyImports) > 0 || len(r.DenyExports) > 0 {
			v.Deny = &monitor.DenyRules{Imports: lc.DenyImports, Exports: lc.DenyExports}
		}
		ups = append(ups, &uplink{link: link, local: local, varz: v})
	}
	return ups, nil
}

// leafConns is the set of in-process connections that the links of one
// App opened. Their subscriptions carry interest learned from a hub, which
// no link may announce to a hub again, so every link's interest watch
// consults the set.
type leafConns struct {
	m sync.Map // *server.Conn → struct{}
}

func (s *leafConns) has(c *server.Conn) bool {
	if c == nil {
		return false
	}
	_, ok := s.m.Load(c)
	return ok
}

// linkLocal adapts *server.Server to leaf.Local for one link. It keeps the
// link's open connections so that /leafz can list the link's
// subscriptions.
//
// linkLocal.mu and localConn.mu are never held together, nor while calling
// the broker; the interest callback, which runs under the broker's locks,
// takes neither.
type linkLocal struct {
	srv   *server.Server
	conns *leafConns

	mu   sync.Mutex
	open map[*localConn]struct{}
}

var _ leaf.Local = (*linkLocal)(nil)

// Connect implements leaf.Local: a no-echo in-process connection that the
// leafConns set knows.
func (l *linkLocal) Connect(account string) (leaf.LocalConn, error) {
	c := l.srv.InProcess(account)
	c.SetNoEcho()
	lc := &localConn{owner: l, c: c, subs: map[*localSub]struct{}{}}
	l.conns.m.Store(c, struct{}{})
	l.mu.Lock()
	l.open[lc] = struct{}{}
	l.mu.Unlock()
	return lc, nil
}

// WatchInterest implements leaf.Local.
func (l *linkLocal) WatchInterest(account string, fn func(leaf.Interest)) ([]leaf.Interest, func()) {
	conv := func(ev server.InterestEvent) leaf.Interest {
		return leaf.Interest{Subject: ev.Subject, Queue: ev.Queue, Added: ev.Added, Leaf: l.conns.has(ev.Origin)}
	}
	existing, cancel := l.srv.WatchInterest(account, func(ev server.InterestEvent) { fn(conv(ev)) })
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
	open := make([]*localConn, 0, len(l.open))
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

// localConn is a link's in-process connection. Besides leaf.LocalConn it
// implements leaf.QueueFilterPublisher, so hub messages reach only the
// queue groups the hub named.
type localConn struct {
	owner *linkLocal
	c     *server.Conn

	mu   sync.Mutex
	subs map[*localSub]struct{}
}

var (
	_ leaf.LocalConn            = (*localConn)(nil)
	_ leaf.QueueFilterPublisher = (*localConn)(nil)
)

// Subscribe implements leaf.LocalConn.
func (lc *localConn) Subscribe(subj string, h func(leaf.Msg)) (leaf.Subscription, error) {
	sub, err := lc.c.Subscribe(subj, "", func(m server.Msg) { h(leaf.Msg(m)) })
	if err != nil {
		return nil, err
	}
	s := &localSub{conn: lc, sub: sub, subject: subj}
	lc.mu.Lock()
	lc.subs[s] = struct{}{}
	lc.mu.Unlock()
	return s, nil
}

// Publish implements leaf.LocalConn.
func (lc *localConn) Publish(route, shown, reply, hdr, data []byte) {
	r, s := routeAndShown(route, shown)
	lc.c.PublishAs(r, s, string(reply), hdr, data)
}

// PublishQueues implements leaf.QueueFilterPublisher.
func (lc *localConn) PublishQueues(route, shown, reply []byte, queues [][]byte, hdr, data []byte) {
	r, s := routeAndShown(route, shown)
	lc.c.PublishQueues(r, s, string(reply), queues, hdr, data)
}

// routeAndShown converts the subjects of a hub message, once when they are
// the same (all but JetStream push deliveries). The broker may keep the
// route in its match cache, so it must be a real copy.
func routeAndShown(route, shown []byte) (string, string) {
	r := string(route)
	if bytes.Equal(route, shown) {
		return r, r
	}
	return r, string(shown)
}

// Close implements leaf.LocalConn.
func (lc *localConn) Close() {
	lc.c.Close()
	lc.owner.conns.m.Delete(lc.c)
	lc.owner.mu.Lock()
	delete(lc.owner.open, lc)
	lc.owner.mu.Unlock()
	lc.mu.Lock()
	clear(lc.subs)
	lc.mu.Unlock()
}

// localSub is a subscription of a localConn.
type localSub struct {
	conn    *localConn
	sub     *server.Subscription
	subject string
}

// Unsubscribe implements leaf.Subscription; it is idempotent.
func (s *localSub) Unsubscribe() {
	s.sub.Unsubscribe()
	s.conn.mu.Lock()
	delete(s.conn.subs, s)
	s.conn.mu.Unlock()
}
