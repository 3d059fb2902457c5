package mqtt

import (
	"slices"
	"strings"

	"github.com/eclipse/paho.golang/packets"
	"github.com/leafbox/leafbox/core/subject"
)

// handlePublish routes a client's PUBLISH and acknowledges it.
func (c *conn) handlePublish(p *packets.Publish, rs *readState) error {
	if c.version == version5 {
		if a := p.Properties.TopicAlias; a != nil {
			// §3.3.2.3.4
			if *a == 0 || *a > DefaultTopicAliasMax {
				return &ProtocolError{Code: codeTopicAliasInvalid, Reason: "topic alias out of range"}
			}
			x := c.x // made during CONNECT for an MQTT 5 client
			if x.aliases == nil {
				x.aliases = map[uint16]string{}
			}
			if p.Topic == "" {
				t, ok := x.aliases[*a]
				if !ok {
					return protocolErr("unknown topic alias %d", *a)
				}
				p.Topic = t
			} else {
				x.aliases[*a] = p.Topic
			}
		}
	}
	var err error
	rs.subj, err = subject.AppendSubjectFromTopic(rs.subj[:0], p.Topic)
	if err != nil {
		// [MQTT-3.3.2-2]: no wildcards in a topic name.
		return &ProtocolError{Code: codeTopicNameInvalid, Reason: err.Error()}
	}
	subj := rs.subj
	ctr := c.counters()
	ctr.inMsgs.Add(1)
	ctr.inBytes.Add(int64(len(p.Payload)))
	c.srv.st.inMsgs.Add(1)
	c.srv.st.inBytes.Add(int64(len(p.Payload)))
	sess := c.sess
	if p.QoS == 2 {
		sess.mu.Lock()
		dup := sess.peek().incoming[p.PacketID]
		n := len(sess.peek().incoming)
		sess.mu.Unlock()
		if dup {
			// Already delivered: PUBREC again, no second delivery (§4.3.3).
			c.send(&packets.Pubrec{PacketID: p.PacketID, Properties: &packets.Properties{}})
			return nil
		}
		if c.version == version5 && n >= c.srv.cfg.MaxInflight {
			// [MQTT-3.3.4-9]
			return &ProtocolError{Code: codeReceiveMaxExceeded, Reason: "receive maximum exceeded"}
		}
	}
	ackCode := codeSuccess
	if perms := c.ident.Perms; perms != nil && !perms.CanPublish(string(subj)) {
		ackCode = codeNotAuthorized
		c.srv.log.Debug("mqtt publish not allowed", "client_id", c.clientID, "subject", string(subj))
	} else if err := c.route(p, subj, rs); err != nil {
		if c.version == version311 {
			// No negative acknowledgement in 3.1.1: close, and the client
			// sends the message again on its next connection.
			return err
		}
		ackCode = codeUnspecified
	}
	if p.QoS == 0 {
		return nil
	}
	ackProps := &packets.Properties{}
	if ackCode != codeSuccess && c.problemInfo {
		// A reason string on a failed acknowledgement (§3.4.2.2.2).
		if ackCode == codeNotAuthorized {
			ackProps.ReasonString = "not authorized to publish to " + p.Topic
		} else {
			ackProps.ReasonString = "not stored"
		}
	}
	switch p.QoS {
	case 1:
		c.sendVia(&packets.Puback{PacketID: p.PacketID, ReasonCode: ackCode, Properties: ackProps}, &rs.flush)
	case 2:
		if ackCode == codeSuccess {
			sess.mu.Lock()
			x := sess.more()
			if x.incoming == nil {
				x.incoming = map[uint16]bool{}
			}
			x.incoming[p.PacketID] = true
			durable := sess.durable
			sess.mu.Unlock()
			if durable {
				if err := c.srv.cfg.State.AddIncomingQoS2(c.clientID, p.PacketID); err != nil {
					return err
				}
			}
		}
		c.send(&packets.Pubrec{PacketID: p.PacketID, ReasonCode: ackCode, Properties: ackProps})
	}
	return nil
}

// route publishes a client's message to the broker, and stores it as
// retained when flagged.
func (c *conn) route(p *packets.Publish, subj []byte, rs *readState) error {
	sess := c.sess
	reply := ""
	if rt := p.Properties.ResponseTopic; rt != "" {
		if _, err := subject.SubjectFromTopic(rt); err != nil {
			// [MQTT-3.3.2-14]: the response topic is a topic name.
			return &ProtocolError{Code: codeProtocolError, Reason: "response topic: " + err.Error()}
		}
		r, err := sess.requestReply(rt, p.Properties.CorrelationData)
		if err != nil {
			return err
		}
		reply = r
	}
	rs.hdr = appendPublishHeader(rs.hdr[:0], p, p.Properties.ResponseTopic)
	hdr := rs.hdr
	if p == &rs.pub && (p.Retain || (p.QoS > 0 && c.srv.cfg.Durable != nil)) {
		// Decoded in place: what is stored gets a copy of its own.
		p.Topic, p.Payload = strings.Clone(p.Topic), slices.Clone(p.Payload)
	}
	if p.Retain {
		if err := c.srv.setRetained(c.ident.Account, p, hdr); err != nil {
			return err
		}
	}
	if p.QoS > 0 && c.srv.cfg.Durable != nil {
		return c.srv.cfg.Durable.PublishDurable(c.ident.Account, string(subj), reply, hdr, p.Payload)
	}
	sess.publish(subj, reply, hdr, p.Payload, &rs.flush)
	return nil
}

func (c *conn) handlePubrel(p *packets.Pubrel) error {
	sess := c.sess
	sess.mu.Lock()
	known := sess.peek().incoming[p.PacketID]
	if known {
		delete(sess.x.incoming, p.PacketID)
	}
	durable := sess.durable
	sess.mu.Unlock()
	if durable && known {
		if err := c.srv.cfg.State.ReleaseIncomingQoS2(c.clientID, p.PacketID); err != nil {
			return err
		}
	}
	code := codeSuccess
	if !known {
		code = codePacketIDNotFound
	}
	c.send(&packets.Pubcomp{PacketID: p.PacketID, ReasonCode: code, Properties: &packets.Properties{}})
	return nil
}
