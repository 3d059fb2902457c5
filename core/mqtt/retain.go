package mqtt

import (
	"slices"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/proto"
)

// Retained messages and wills.

// setRetained stores (or, with an empty payload, clears [MQTT-3.3.1-10])
// the retained message of a client's PUBLISH.
func (srv *Server) setRetained(account string, p *packets.Publish, hdr []byte) error {
	m := Msg{Topic: p.Topic, Payload: p.Payload, QoS: p.QoS, Retain: true, Time: time.Now()}
	m.Header = slices.Clone(hdr)
	if account != auth.GlobalAccount && account != "" {
		m.Header = proto.AppendHeader(nil, m.Header, headerAccount, account)
	}
	srv.st.retained.Add(1)
	return srv.cfg.State.SetRetained(p.Topic, m)
}

// sendRetained sends the retained messages matching filter to the
// session with the retain flag [MQTT-3.3.1-8], at the lower of their QoS
// and the subscription's.
func (c *conn) sendRetained(filter string, qos byte) {
	msgs, err := c.srv.cfg.State.Retained(filter)
	if err != nil {
		c.srv.log.Warn("mqtt retained messages not read", "filter", filter, "err", err)
		return
	}
	account := c.ident.Account
	for _, m := range msgs {
		acc := string(proto.HeaderValue(m.Header, headerAccount))
		if acc == "" {
			acc = auth.GlobalAccount
		}
		if acc != account && !(account == "" && acc == auth.GlobalAccount) {
			continue
		}
		m.QoS = min(m.QoS, qos)
		m.Retain = true
		s := c.sess
		s.mu.Lock()
		s.queueLocked(m, s.matchIDs(m.Topic), nil)
		s.mu.Unlock()
	}
}

// publishWill publishes a connection's last will (§3.1.2.5).
func (srv *Server) publishWill(account string, w *will) {
	if w.retain {
		p := &packets.Publish{Topic: w.topic, Payload: w.payload, QoS: w.qos, Retain: true}
		if err := srv.setRetained(account, p, w.hdr); err != nil {
			srv.log.Warn("mqtt retained will not stored", "topic", w.topic, "err", err)
		}
	}
	if w.qos > 0 && srv.cfg.Durable != nil {
		if err := srv.cfg.Durable.PublishDurable(account, w.subj, "", w.hdr, w.payload); err != nil {
			srv.log.Warn("mqtt will not published", "topic", w.topic, "err", err)
		}
		return
	}
	bus := srv.cfg.Broker.InProcess(account)
	bus.Publish(w.subj, "", w.hdr, w.payload)
	bus.Close()
}

// attach binds a connected client to its session: a new one, or the
// stored one unless clean is set; present reports a resumed session. A
// connection still holding the session is taken over [MQTT-3.1.4-2].
func (srv *Server) attach(c *conn, ident *auth.Identity, clean bool, expiry uint32, version byte) (*session, bool) {
	srv.mu.Lock()
	old := srv.sessions[c.clientID]
	srv.mu.Unlock()
	if old != nil {
		old.mu.Lock()
		oc := old.conn
		old.conn = nil // its cleanup sees the takeover and leaves the session
		sameAccount := old.ident.Account == ident.Account
		ended := old.ended
		old.mu.Unlock()
		if oc != nil {
			oc.closeWith(codeSessionTakenOver, "session taken over", false)
		}
		if ended {
			old = nil
		} else if clean || !sameAccount {
			old.end()
			old = nil
		}
	}
	present := old != nil
	s := old
	if s == nil {
		s = newSession(srv, c.clientID, ident)
		srv.mu.Lock()
		srv.sessions[c.clientID] = s
		srv.mu.Unlock()
	}
	s.mu.Lock()
	s.ident = ident
	s.version, s.expiry = version, expiry
	wasDurable := s.durable
	s.durable = wasDurable || expiry != 0
	s.mu.Unlock()
	if expiry != 0 {
		s.save()
	}
	return s, present
}
