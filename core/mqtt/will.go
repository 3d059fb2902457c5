package mqtt

import (
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/leafbox/leafbox/core/subject"
)

// will is a connection's last will.
type will struct {
	topic   string
	subj    string
	payload []byte
	hdr     []byte
	qos     byte
	retain  bool
	delay   uint32
}

// buildWill checks and converts the will of a CONNECT.
func (c *conn) buildWill(p *packets.Connect) (*will, error) {
	subj, err := subject.SubjectFromTopic(p.WillTopic)
	if err != nil {
		return nil, err
	}
	w := &will{topic: p.WillTopic, subj: subj, payload: p.WillMessage, qos: p.WillQOS, retain: p.WillRetain}
	wp := &packets.Publish{QoS: p.WillQOS, Retain: p.WillRetain, Properties: &packets.Properties{}}
	if p.WillProperties != nil {
		wp.Properties = p.WillProperties
		if d := p.WillProperties.WillDelayInterval; d != nil {
			w.delay = *d
		}
	}
	w.hdr = appendPublishHeader(nil, wp, wp.Properties.ResponseTopic)
	return w, nil
}

func (c *conn) handleDisconnect(p *packets.Disconnect) error {
	if c.version == version5 {
		if e := p.Properties.SessionExpiryInterval; e != nil {
			c.sess.mu.Lock()
			was := c.sess.expiry
			if was == 0 && *e != 0 {
				c.sess.mu.Unlock()
				// [MQTT-3.14.2-2]
				return protocolErr("session expiry set on DISCONNECT after 0 on CONNECT")
			}
			c.sess.expiry = *e
			c.sess.durable = c.sess.durable || *e != 0
			c.sess.mu.Unlock()
		}
	}
	// [MQTT-3.14.4-3]: a normal DISCONNECT discards the will; v5 0x04
	// asks for it to be published.
	c.graceful = p.ReasonCode != codeDisconnectWithWill
	c.mu.Lock()
	c.connected = false // no DISCONNECT back
	c.mu.Unlock()
	c.closeWith(codeSuccess, "", false)
	return nil
}

// finish runs once the connection is closing and neither its reader nor
// its writer runs: it detaches the session and publishes the will if it
// must.
func (c *conn) finish() {
	defer c.srv.wg.Done()
	c.srv.removeConn(c)
	if c.sess == nil {
		return
	}
	sess, w := c.sess, c.will()
	if !sess.detachConn(c) {
		// Taken over: the new connection owns the session now. The will
		// goes out unless the session lives on and the will had a delay,
		// which the new connection came back within (§3.1.2.5).
		if w != nil && !c.graceful {
			sess.mu.Lock()
			resumed := !sess.ended && sess.conn != nil
			sess.mu.Unlock()
			if !resumed || w.delay == 0 {
				c.srv.publishWill(c.ident.Account, w)
			}
		}
		return
	}
	if w == nil || c.graceful {
		return
	}
	sess.mu.Lock()
	delay := min(w.delay, sess.expiry)
	ended := sess.ended
	sess.mu.Unlock()
	if delay == 0 || ended {
		c.srv.publishWill(c.ident.Account, w)
		return
	}
	account := c.ident.Account
	sess.mu.Lock()
	// A new connection that took the session over since the detach came
	// back within the delay: no will (attachConn ran before this timer).
	if sess.conn == nil {
		sess.more().willT = time.AfterFunc(time.Duration(delay)*time.Second, func() { c.srv.publishWill(account, w) })
	}
	sess.mu.Unlock()
}
