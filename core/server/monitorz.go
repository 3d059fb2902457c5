package server

import (
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"time"

	"github.com/leafbox/leafbox/core/monitor"
)

// The Server is the monitor's data source.
var _ monitor.Provider = (*Server)(nil)

// ServerID implements monitor.Provider.
func (s *Server) ServerID() string { return s.id }

// Varz implements monitor.Provider.
func (s *Server) Varz() *monitor.Varz {
	s.mu.Lock()
	opts := s.opts
	conns := len(s.clients)
	accounts := make([]*account, 0, len(s.accounts))
	for _, acc := range s.accounts {
		accounts = append(accounts, acc)
	}
	port := opts.Port
	if a, ok := s.listenerAddr().(*net.TCPAddr); ok {
		port = a.Port
	}
	configTime := s.configTime
	s.mu.Unlock()
	var subs uint32
	for _, acc := range accounts {
		subs += uint32(acc.sl.Count())
	}
	st := &s.stats
	v := &monitor.Varz{
		ID:               s.id,
		Name:             opts.ServerName,
		Version:          Version,
		LeafboxVersion:   opts.BuildVersion,
		GitCommit:        opts.BuildCommit,
		BuildDate:        opts.BuildDate,
		Proto:            1,
		Host:             opts.Host,
		Port:             port,
		AuthRequired:     s.authHandler.Load().Required(),
		TLSRequired:      opts.TLS != nil,
		TLSVerify:        opts.TLSVerify,
		MaxConn:          opts.MaxConnections,
		MaxSubs:          opts.MaxSubs,
		PingInterval:     opts.PingInterval,
		MaxPingsOut:      opts.MaxPingsOut,
		AuthTimeout:      opts.AuthTimeout.Seconds(),
		MaxControlLine:   opts.MaxControlLine,
		MaxPayload:       int(opts.MaxPayload),
		MaxPending:       opts.MaxPending,
		TLSTimeout:       opts.TLSTimeout.Seconds(),
		WriteDeadline:    opts.WriteDeadline,
		Start:            s.start,
		Connections:      conns,
		TotalConnections: uint64(st.totalConnections.Load()),
		InMsgs:           st.inMsgs.Load(),
		InBytes:          st.inBytes.Load(),
		InClientMsgs:     st.inMsgs.Load(),
		InClientBytes:    st.inBytes.Load(),
		OutMsgs:          st.outMsgs.Load(),
		OutBytes:         st.outBytes.Load(),
		OutClientMsgs:    st.outMsgs.Load(),
		OutClientBytes:   st.outBytes.Load(),
		SlowConsumers:    st.slowConsumers.Load(),
		StaleConnections: st.staleConnections.Load(),
		StalledClients:   st.stalls.Load(),
		Subscriptions:    subs,
		ConfigLoadTime:   configTime,
		SlowConsumersStats: &monitor.SlowConsumersStats{
			Clients: uint64(st.slowConsumers.Load()),
		},
	}
	return v
}

// Connections implements monitor.Provider.
func (s *Server) Connections(state monitor.ConnState, subs bool) []monitor.ConnSnapshot {
	s.mu.Lock()
	var open []*client
	if state != monitor.ConnClosed {
		open = make([]*client, 0, len(s.clients))
		for _, c := range s.clients {
			open = append(open, c)
		}
	}
	var closed []monitor.ConnSnapshot
	if state != monitor.ConnOpen {
		closed = make([]monitor.ConnSnapshot, 0, len(s.closed))
		for _, rec := range s.closed {
			snap := rec.snapshot
			if !subs {
				snap.Subs = nil
			}
			closed = append(closed, snap)
		}
	}
	s.mu.Unlock()
	out := make([]monitor.ConnSnapshot, 0, len(open)+len(closed))
	for _, c := range open {
		out = append(out, c.snapshot(subs))
	}
	return append(out, closed...)
}

// snapshot describes c for /connz.
func (c *client) snapshot(subs bool) monitor.ConnSnapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	snap := monitor.ConnSnapshot{
		Cid:          c.cid,
		Kind:         "Client",
		Type:         "nats",
		IP:           c.host,
		Port:         c.port,
		Start:        c.start,
		LastActivity: time.Unix(0, c.lastActivity.Load()),
		Stop:         c.stop,
		RTT:          c.rtt,
		Pending:      len(c.out) + c.inFlight,
		InMsgs:       c.stats.inMsgs.Load(),
		OutMsgs:      c.outMsgs,
		InBytes:      c.stats.inBytes.Load(),
		OutBytes:     c.outBytes,
		Stalls:       c.stats.stalls.Load(),
		NumSubs:      len(c.subs),
		Name:         c.connectOpts.Name,
		Lang:         c.connectOpts.Lang,
		Version:      c.connectOpts.Version,
		TLSFirst:     c.tlsFirst,
	}
	if !c.stop.IsZero() {
		snap.Reason = c.reason.String()
	}
	if c.tlsConn != nil {
		cs := c.tlsConn.ConnectionState()
		snap.TLSVersion = tlsVersionName(cs.Version)
		snap.TLSCipher = tls.CipherSuiteName(cs.CipherSuite)
	}
	if id := c.ident.Load(); id != nil {
		snap.User = id.User
		snap.Account = id.Account
	}
	if subs {
		snap.Subs = make([]monitor.SubDetail, 0, len(c.subs))
		for _, sub := range c.subs {
			snap.Subs = append(snap.Subs, sub.detailLocked(c))
		}
	}
	return snap
}

// detailLocked describes sub; c.mu must be held.
func (sub *subscription) detailLocked(c *client) monitor.SubDetail {
	d := monitor.SubDetail{Subject: sub.subject, Queue: sub.queue, Sid: sub.sid, Msgs: sub.msgs, Max: sub.max, Cid: c.cid}
	if c.acc != nil {
		d.Account = c.acc.name
	}
	return d
}

func tlsVersionName(v uint16) string {
	switch v {
	case tls.VersionTLS12:
		return "1.2"
	case tls.VersionTLS13:
		return "1.3"
	}
	return tls.VersionName(v)
}

// Subscriptions implements monitor.Provider.
func (s *Server) Subscriptions(account string) []monitor.SubDetail {
	var out []monitor.SubDetail
	for _, acc := range s.accountList(account) {
		acc.sl.Walk(func(_, _ string, sub *subscription) bool {
			c := sub.client
			if c == nil {
				// An in-process subscription (JetStream, leaf, uplinks):
				// no connection, no sid.
				out = append(out, monitor.SubDetail{Account: acc.name, Subject: sub.subject, Queue: sub.queue})
				return true
			}
			c.mu.Lock()
			out = append(out, sub.detailLocked(c))
			c.mu.Unlock()
			return true
		})
	}
	return out
}

// SublistStats implements monitor.Provider.
func (s *Server) SublistStats(account string) monitor.SublistStats {
	var total monitor.SublistStats
	var hits, fanout float64
	for _, acc := range s.accountList(account) {
		st := acc.sl.Stats()
		total.NumSubs += st.NumSubs
		total.NumCache += st.NumCache
		total.NumInserts += st.NumInserts
		total.NumRemoves += st.NumRemoves
		total.NumMatches += st.NumMatches
		total.MaxFanout = max(total.MaxFanout, st.MaxFanout)
		hits += st.CacheHitRate * float64(st.NumMatches)
		fanout += st.AvgFanout * float64(st.NumCache)
	}
	if total.NumMatches > 0 {
		total.CacheHitRate = hits / float64(total.NumMatches)
	}
	if total.NumCache > 0 {
		total.AvgFanout = fanout / float64(total.NumCache)
	}
	return total
}

// accountList returns the named account, or all accounts for "".
func (s *Server) accountList(name string) []*account {
	s.mu.Lock()
	defer s.mu.Unlock()
	if name != "" {
		if acc := s.accounts[name]; acc != nil {
			return []*account{acc}
		}
		return nil
	}
	out := make([]*account, 0, len(s.accounts))
	for _, acc := range s.accounts {
		out = append(out, acc)
	}
	return out
}

// Accounts implements monitor.Provider.
func (s *Server) Accounts() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.accounts))
	for name := range s.accounts {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// Ready implements monitor.Provider.
func (s *Server) Ready() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.shutdown:
		return errors.New("server is shutting down")
	case s.lameDuck:
		return errors.New("server is in lame duck mode")
	case s.listener == nil:
		return errors.New("server is not accepting connections yet")
	}
	return nil
}
