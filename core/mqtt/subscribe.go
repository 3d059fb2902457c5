package mqtt

import (
	"github.com/eclipse/paho.golang/packets"
	"github.com/leafbox/leafbox/core/subject"
)

func (c *conn) handleSubscribe(p *packets.Subscribe) error {
	ack := &packets.Suback{PacketID: p.PacketID, Properties: &packets.Properties{}}
	subID := 0
	if id := p.Properties.SubscriptionIdentifier; id != nil {
		if *id == 0 {
			return protocolErr("subscription identifier 0") // §3.8.2.1.2
		}
		subID = *id
	}
	type retainJob struct {
		filter string
		qos    byte
		rap    bool
	}
	var jobs []retainJob
	for _, so := range p.Subscriptions {
		code := c.subscribe(so, subID)
		ack.Reasons = append(ack.Reasons, code)
		if code > codeGrantedQoS2 {
			continue
		}
		group, filter, _ := parseShare(so.Topic)
		// Retained messages: not for shared subscriptions (§4.8.2),
		// never with retain handling 2, with 1 only for a new one.
		if group == "" && so.RetainHandling != 2 && !(so.RetainHandling == 1 && code&0x80 != 0) {
			jobs = append(jobs, retainJob{filter, so.QoS, so.RetainAsPublished})
		}
	}
	c.sess.save()
	c.send(ack)
	for _, j := range jobs {
		c.sendRetained(j.filter, j.qos)
	}
	return nil
}

// subscribe makes one subscription and returns its SUBACK code.
func (c *conn) subscribe(so packets.SubOptions, subID int) byte {
	group, filter, err := parseShare(so.Topic)
	if err != nil {
		return codeTopicFilterInvalid
	}
	if group != "" && so.NoLocal {
		// [MQTT-3.8.3-4]: no-local on a shared subscription.
		return codeProtocolError
	}
	subj, _, err := subject.SubjectFromTopicFilter(filter)
	if err != nil {
		return codeTopicFilterInvalid
	}
	if perms := c.ident.Perms; perms != nil && !perms.CanSubscribe(subj, group) {
		return codeNotAuthorized
	}
	sub := Sub{QoS: so.QoS, NoLocal: so.NoLocal, RetainAsPublished: so.RetainAsPublished, RetainHandling: so.RetainHandling, SubID: subID}
	if err := c.sess.addSub(so.Topic, sub); err != nil {
		c.srv.log.Warn("mqtt subscribe failed", "client_id", c.clientID, "filter", so.Topic, "err", err)
		return codeUnspecified
	}
	return so.QoS // granted QoS = requested; leafbox supports QoS 2
}

func (c *conn) handleUnsubscribe(p *packets.Unsubscribe) error {
	ack := &packets.Unsuback{PacketID: p.PacketID, Properties: &packets.Properties{}}
	for _, f := range p.Topics {
		if c.sess.removeSub(f) {
			ack.Reasons = append(ack.Reasons, codeSuccess)
		} else {
			ack.Reasons = append(ack.Reasons, codeNoSubscriptionExisted)
		}
	}
	c.sess.save()
	c.send(ack)
	return nil
}
