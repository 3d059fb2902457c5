package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf"
)

// leafListenChange reports a reload that changes the leafnode listener,
// which needs a restart.
func leafListenChange(old, cfg *config.Config) error {
	part := func(c *config.Config) any {
		if c.LeafNodes == nil {
			return nil
		}
		ln := *c.LeafNodes
		ln.Remotes = nil
		return ln
	}
	if !reflect.DeepEqual(part(old), part(cfg)) {
		return errors.New("leafnodes: changing listen, authorization, tls or compression needs a restart")
	}
	return nil
}

// buildListener builds the leafnode listener of cfg over srv, or returns
// nil when leafnodes.listen is not set. cfg has been validated.
func buildListener(cfg *config.Config, srv *server.Server, log *slog.Logger) (*leaf.Listener, error) {
	if cfg.LeafListenAddr() == "" {
		return nil, nil
	}
	ac, err := leafAcceptConfig(cfg)
	if err != nil {
		return nil, err
	}
	ac.ServerID = srv.ID()
	l, err := leaf.NewListener(ac, newAcceptLocal(srv), log.With("subsystem", "leaf", "role", "hub"))
	if err != nil {
		return nil, fmt.Errorf("leafnodes.listen: %w", err)
	}
	return l, nil
}

// acceptLocal adapts *server.Server to leaf.AcceptLocal. Its connections
// are not in any link's leafConns set: a solicited link announces the
// interest of attached leafs to its hub (queue groups as queue interest,
// with the leaf's weight), as nats-server's spoke does for leafs it is the
// hub of.
type acceptLocal struct {
	srv    *server.Server
	byConn sync.Map // *server.Conn → *acceptConn
}

func newAcceptLocal(srv *server.Server) *acceptLocal {
	return &acceptLocal{srv: srv}
}

var _ leaf.AcceptLocal = (*acceptLocal)(nil)

// Connect implements leaf.AcceptLocal: a no-echo combined in-process
// connection, which gets each message once for all its subscriptions.
func (a *acceptLocal) Connect(account string, deliver func(leaf.Delivery)) (leaf.AcceptConn, error) {
	c := a.srv.InProcessCombined(account, func(m server.Msg, plain bool, queues []string) {
		deliver(leaf.Delivery{Msg: leaf.Msg(m), Plain: plain, Queues: queues})
	})
	c.SetNoEcho()
	ac := &acceptConn{c: c, owner: a}
	a.byConn.Store(c, ac)
	return ac, nil
}

// WatchInterest implements leaf.AcceptLocal.
func (a *acceptLocal) WatchInterest(account string, fn func(leaf.AcceptInterest)) ([]leaf.AcceptInterest, func()) {
	conv := func(ev server.InterestEvent) leaf.AcceptInterest {
		out := leaf.AcceptInterest{Interest: leaf.Interest{Subject: ev.Subject, Queue: ev.Queue, Added: ev.Added}}
		if ev.Origin != nil {
			if c, ok := a.byConn.Load(ev.Origin); ok {
				out.From = c.(*acceptConn)
			}
		}
		return out
	}
	existing, cancel := a.srv.WatchInterest(account, func(ev server.InterestEvent) { fn(conv(ev)) })
	out := make([]leaf.AcceptInterest, len(existing))
	for i, ev := range existing {
		out[i] = conv(ev)
	}
	return out, cancel
}

// acceptConn is an attached leaf's in-process connection.
type acceptConn struct {
	c     *server.Conn
	owner *acceptLocal
}

var _ leaf.AcceptConn = (*acceptConn)(nil)

// Subscribe implements leaf.AcceptConn.
func (c *acceptConn) Subscribe(subj, queue string) (leaf.Subscription, error) {
	return c.c.Subscribe(subj, queue, nil)
}

// PublishQueues implements leaf.QueueFilterPublisher.
func (c *acceptConn) PublishQueues(route, shown, reply []byte, queues [][]byte, hdr, data []byte) {
	r, s := routeAndShown(route, shown)
	c.c.PublishQueues(r, s, string(reply), queues, hdr, data)
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

// LeafListener returns the leafnode listener, or nil when leafnodes.listen
// is not set.
func (a *App) LeafListener() *leaf.Listener { return a.listener }

// startListener starts the leafnode listener, if any, and returns its
// URLs for the ports file.
func (a *App) startListener() ([]string, error) {
	if a.listener == nil {
		return nil, nil
	}
	if err := a.listener.Start(); err != nil {
		return nil, fmt.Errorf("leafnodes.listen: %w", err)
	}
	urls := URLs("nats-leaf", a.listener.Addr())
	a.log.Info("listening for leafnode connections", "url", urls[0])
	// Client certificates verified against a CA authenticate too.
	if lt := a.cfg.LeafNodes.TLS; a.cfg.LeafAuth() == nil && (lt == nil || !lt.Verify) {
		a.log.Warn("leafnode listener has no authorization: any leaf that reaches it may attach and exchange messages; set leafnodes.authorization",
			"addr", a.listener.Addr().String())
	}
	return urls, nil
}

// closeListener closes the leafnode listener and its leafs.
func (a *App) closeListener() {
	if a.listener != nil {
		_ = a.listener.Close()
	}
}
