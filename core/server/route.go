package server

import (
	"math/rand/v2"
	"time"
	"unsafe"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/core/sublist"
)

// subscription is one SUB of one connection. Its strings are owned copies.
type subscription struct {
	client  *client    // the subscribing connection, or nil
	handler MsgHandler // the in-process subscriber, or nil
	conn    *Conn      // the in-process connection owning handler
	subject string
	queue   string
	sid     string
	sidB    []byte
	// max and delivered implement UNSUB with a message count; both are
	// guarded by client.mu.
	max       int64
	delivered int64
	msgs      int64 // messages delivered, for /subsz; guarded by client.mu
	// filtered marks a wildcard subscription that overlaps a deny entry of
	// its client's permissions: each delivery is checked (nats-server
	// filters such subscriptions when delivering).
	filtered bool
}

// Reply prefixes a client may not use (nats-server's isReservedReply):
// service-import replies, JetStream acks and gateway-routed replies.
var reservedReplyPrefixes = [...]string{"_R_.", "$JS.ACK.", "_GR_.", "$GR."}

func isReservedReply(reply []byte) bool {
	for _, p := range reservedReplyPrefixes {
		if len(reply) > len(p) && string(reply[:len(p)]) == p {
			return true
		}
	}
	return false
}

// processSub handles SUB.
func (c *client) processSub(subj, queue, sid []byte) {
	if !subject.ValidBytes(subj) || (len(queue) > 0 && !subject.ValidQueue(string(queue))) {
		c.sendErr("Invalid Subject")
		return
	}
	id := c.ident.Load()
	sub := &subscription{client: c, subject: string(subj), queue: string(queue), sid: string(sid)}
	sub.sidB = []byte(sub.sid)
	if id != nil {
		sub.filtered = id.Perms.NeedsDeliveryCheck(sub.subject, sub.queue)
	}
	if id != nil && !id.Perms.CanSubscribe(sub.subject, sub.queue) {
		c.mu.Lock()
		c.out = appendSubViolation(c.out, sub.subject, sub.queue)
		c.mu.Unlock()
		c.flushes[c] = struct{}{}
		c.logSubViolation(sub.subject, sub.queue)
		return
	}
	maxSubs := c.srv.options().MaxSubs
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	if _, dup := c.subs[sub.sid]; dup {
		// A repeated sid is a no-op, as in nats-server.
		c.mu.Unlock()
		c.ackVerbose()
		return
	}
	if maxSubs > 0 && len(c.subs) >= maxSubs {
		c.out = proto.AppendErr(c.out, "maximum subscriptions exceeded")
		c.mu.Unlock()
		c.flushes[c] = struct{}{}
		return
	}
	acc := c.acc
	c.subs[sub.sid] = sub
	c.mu.Unlock()
	if err := acc.addSub(sub); err != nil {
		c.mu.Lock()
		delete(c.subs, sub.sid)
		c.mu.Unlock()
		c.sendErr("Invalid Subject")
		return
	}
	c.ackVerbose()
}

// ackVerbose sends +OK to a verbose client.
func (c *client) ackVerbose() {
	c.mu.Lock()
	if c.verbose && !c.closing {
		c.out = append(c.out, proto.OKLine...)
	}
	c.mu.Unlock()
	c.flushes[c] = struct{}{}
}

// processUnsub handles UNSUB. An unknown sid is ignored.
func (c *client) processUnsub(sid []byte, max int64) {
	c.mu.Lock()
	sub := c.subs[string(sid)]
	remove := sub != nil && (max <= 0 || sub.delivered >= max)
	if sub != nil {
		if remove {
			delete(c.subs, sub.sid)
		} else {
			sub.max = max
		}
	}
	acc := c.acc
	c.mu.Unlock()
	if remove {
		acc.removeSub(sub)
	}
	c.ackVerbose()
}

// processPub routes one PUB or HPUB.
func (c *client) processPub(op *proto.Op) {
	c.batch.inMsgs++
	c.batch.inBytes += int64(len(op.Payload))
	if op.HeaderLen >= 0 && !c.headers {
		// HPUB from a client that did not negotiate headers.
		c.sendErrAndClose("Unknown Protocol Operation", reasonProtocolViolation)
		return
	}
	if c.pedantic && !subject.ValidLiteralBytes(op.Subject) {
		c.sendErr("Invalid Publish Subject")
		return
	}
	if len(op.Reply) > 0 && isReservedReply(op.Reply) {
		c.sendErr(`Permissions Violation for Publish with Reply of "` + string(op.Reply) + `"`)
		c.logPubViolation(op.Subject, op.Reply)
		return
	}
	if id := c.ident.Load(); id != nil && id.Perms != nil && !c.pubAllowed(op.Subject, id) {
		c.sendErr(`Permissions Violation for Publish to "` + string(op.Subject) + `"`)
		c.logPubViolation(op.Subject, nil)
		return
	}
	// No lock for acc and verbose: processConnect, which sets them, runs
	// on this goroutine (the read loop) and nothing else writes them after
	// the connection starts (a reload that changes the account closes the
	// connection instead), so this goroutine reads its own writes; other
	// goroutines only read them, under mu. headers and pedantic above are
	// read the same way.
	if c.verbose {
		c.ackVerbose()
	}
	hdr, data := splitPayload(op)
	// A publisher usually repeats its subject: the memo answers a repeat
	// without the sublist's locks while no subscription changed.
	res := c.acc.sl.MatchBytesMemo(op.Subject, &c.memo)
	if len(res.Plain) == 0 && len(res.Queues) == 0 && len(op.Reply) == 0 {
		return // no interest, nothing to answer
	}
	if deliverResult(c, nil, res, op.Subject, op.Subject, op.Reply, hdr, data, &c.combine) == 0 &&
		len(op.Reply) > 0 && c.noResponders {
		c.sendNoResponders(c.acc, op.Subject, op.Reply)
	}
}

// splitPayload returns the header block (nil for PUB) and the body.
func splitPayload(op *proto.Op) (hdr, data []byte) {
	if op.HeaderLen > 0 {
		return op.Payload[:op.HeaderLen], op.Payload[op.HeaderLen:]
	}
	return nil, op.Payload
}

// deliverResult sends a message to every plain subscriber in res and one
// member of each queue group, returning the number of deliveries. c is the
// publishing connection, nil for an in-process publisher; batch gathers
// the combined connections' deliveries, sent once each at the end.
func deliverResult(c *client, ic *Conn, res *sublist.Result[*subscription], route, subj, reply, hdr, data []byte, batch *combineBatch) int {
	delivered := 0
	for _, sub := range res.Plain {
		if combined, takes := sub.combinedTakes(ic); combined {
			if takes {
				batch.add(sub.conn, "")
				delivered++
			}
			continue
		}
		if sub.deliver(c, ic, route, subj, reply, hdr, data) {
			delivered++
		}
	}
	for i := range res.Queues {
		delivered += deliverToOne(c, ic, res.Queues[i].Members, route, subj, reply, hdr, data, batch)
	}
	batch.flush(route, subj, reply, hdr, data)
	return delivered
}

// deliverToOne delivers to one member of a queue group, returning 1, or 0
// when no member takes it. It starts at a random member and takes the
// first that accepts, so a closing member or our own (echo off) does not
// lose the message. Members of combined connections (attached leafnodes)
// are used only when no other member takes the message, as nats-server
// prefers local queue subscribers over a leafnode; the chosen one is
// recorded in batch instead of being called.
func deliverToOne(c *client, ic *Conn, members []*subscription, route, subj, reply, hdr, data []byte, batch *combineBatch) int {
	n := len(members)
	if n == 0 {
		return 0
	}
	start := rand.IntN(n)
	var fallback *subscription // a combined member: used only when no other takes it
	for j := 0; j < n; j++ {
		m := members[(start+j)%n]
		if combined, takes := m.combinedTakes(ic); combined {
			if takes && fallback == nil {
				fallback = m
			}
			continue
		}
		if m.deliver(c, ic, route, subj, reply, hdr, data) {
			return 1
		}
	}
	if fallback != nil {
		batch.add(fallback.conn, fallback.queue)
		return 1
	}
	return 0
}

// deliver hands one message to sub: to its in-process handler, or to its
// connection's outbound buffer. from is the publishing connection (nil
// in-process), whose read batch flushes the target afterwards. It returns
// false when the message was not delivered: echo suppressed, target
// closing, or sub exhausted. fromConn is the in-process publisher, if any.
func (sub *subscription) deliver(from *client, fromConn *Conn, route, subj, reply, hdr, data []byte) bool {
	if sub.handler != nil {
		if fromConn != nil && sub.conn == fromConn && fromConn.noEcho {
			return false
		}
		sub.handler(Msg{Subject: subj, Route: route, Reply: reply, Header: hdr, Data: data})
		return true
	}
	if sub.client == from && !from.echo {
		return false
	}
	return sub.client.deliver(from, sub, subj, reply, hdr, data)
}

// deliver appends one MSG or HMSG for sub to c's outbound buffer.
func (c *client) deliver(from *client, sub *subscription, subj, reply, hdr, data []byte) bool {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return false
	}
	if c.stall != nil && from != nil && from != c {
		from.stalledWait(c)
		if c.closing {
			c.mu.Unlock()
			return false
		}
	}
	if sub.max > 0 && sub.delivered >= sub.max {
		c.mu.Unlock()
		return false
	}
	if sub.filtered {
		if id := c.ident.Load(); id != nil && !id.Perms.CanDeliver(unsafeString(subj), sub.queue) {
			c.mu.Unlock()
			return false
		}
	}
	sub.delivered++
	sub.msgs++
	autoUnsub := sub.max > 0 && sub.delivered >= sub.max
	hdrLen := -1
	if len(hdr) > 0 && c.headers {
		hdrLen = len(hdr)
	} else {
		hdr = nil
	}
	c.out = proto.AppendMsg(c.out, subj, sub.sidB, reply, hdrLen, len(hdr)+len(data))
	c.out = append(c.out, hdr...)
	c.out = append(c.out, data...)
	c.out = append(c.out, '\r', '\n')
	if len(reply) > 0 {
		if id := c.ident.Load(); id != nil && id.Perms.Response() != nil {
			c.grantResponseLocked(reply, id.Perms.Response())
		}
	}
	pending := int64(len(c.out) + c.inFlight)
	if pending > c.maxPending {
		c.srv.stats.slowConsumers.Add(1)
		c.markClosingLocked(reasonSlowPending, false)
		c.mu.Unlock()
		c.srv.log.Warn("slow consumer closed", "cid", c.cid, "pending_bytes", pending)
		c.teardown()
		return true
	}
	if pending > c.stallAt && c.stall == nil {
		// Falling behind: producers wait a little at this gate (see
		// stalledWait) until writeLoop catches up.
		c.stall = make(chan struct{})
	}
	if autoUnsub {
		delete(c.subs, sub.sid)
	}
	size := int64(len(hdr) + len(data))
	c.outMsgs++ // under mu, which is held anyway: no atomic per delivery
	c.outBytes += size
	acc := c.acc
	if from == nil {
		// An in-process publisher has no read batch to flush after: it
		// writes the message now if it can, or wakes the writer.
		c.flushInProcessLocked()
	}
	c.mu.Unlock()
	if from != nil {
		// The publisher adds its batch to the server totals once.
		from.batch.outMsgs++
		from.batch.outBytes += size
	} else {
		c.srv.stats.outMsgs.Add(1)
		c.srv.stats.outBytes.Add(size)
	}
	if autoUnsub && acc != nil {
		acc.removeSub(sub)
	}
	if from != nil && from.lastFlush != c {
		// The publisher's read loop flushes c at the end of its batch;
		// a run of messages to one client costs one map insert.
		from.flushes[c] = struct{}{}
		from.lastFlush = c
	}
	return true
}

// Producer stall bounds, as in nats-server: a producer waits at most this
// long for one consumer, and at most stallTotalAllowed per read batch.
const (
	stallMin          = 2 * time.Millisecond
	stallMax          = 5 * time.Millisecond
	stallTotalAllowed = 10 * time.Millisecond
)

// stalledWait makes producer p wait briefly for consumer c, whose outbound
// buffer is over three quarters full, so that a fast publisher slows down
// to what its subscribers take instead of cutting them off as slow
// consumers. Called with c.mu held; it releases it while waiting.
func (p *client) stalledWait(c *client) {
	if p.stallTotal >= stallTotalAllowed {
		return
	}
	gate := c.stall
	ttl := stallMin
	if int64(len(c.out)+c.inFlight) >= c.maxPending {
		ttl = stallMax
	}
	ttl = min(ttl, stallTotalAllowed-p.stallTotal)
	c.stats.stalls.Add(1)
	c.srv.stats.stalls.Add(1)
	c.cond.Signal()
	c.mu.Unlock()
	start := time.Now()
	if p.stallTimer == nil {
		p.stallTimer = time.NewTimer(ttl)
	} else {
		p.stallTimer.Reset(ttl)
	}
	select {
	case <-gate:
	case <-p.stallTimer.C:
	}
	p.stallTimer.Stop()
	p.stallTotal += time.Since(start)
	c.mu.Lock()
}

// sendNoResponders tells the publisher that its request found no
// subscriber: a header-only message with status 503 on its own
// subscription matching the reply subject.
func (c *client) sendNoResponders(acc *account, subj, reply []byte) {
	res := acc.sl.MatchBytes(reply)
	var sub *subscription
	for _, s := range res.Plain {
		if s.client == c {
			sub = s
			break
		}
	}
	for i := 0; sub == nil && i < len(res.Queues); i++ {
		for _, s := range res.Queues[i].Members {
			if s.client == c {
				sub = s
				break
			}
		}
	}
	if sub == nil {
		return
	}
	hdr := proto.AppendStatusHeader(nil, 503, "", "Nats-Subject", string(subj))
	c.deliver(c, sub, reply, nil, hdr, nil)
	c.flushes[c] = struct{}{}
}

// pubAllowed checks the publish permission of subj. auth.Perms caches
// results per subject; reply subjects granted by allow_responses are
// checked last. It runs on the read loop.
func (c *client) pubAllowed(subj []byte, id *auth.Identity) bool {
	// auth copies the subject before caching it, so a view of the read
	// buffer is safe here.
	if id.Perms.CanPublish(unsafeString(subj)) {
		return true
	}
	if id.Perms.Response() == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	grant := c.replies[string(subj)]
	if grant == nil {
		return false
	}
	if time.Now().After(grant.expires) {
		delete(c.replies, string(subj))
		return false
	}
	if grant.remaining--; grant.remaining <= 0 {
		delete(c.replies, string(subj))
	}
	return true
}

// unsafeString views b as a string without copying. The result must not
// outlive b's contents and must not be retained by the callee.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// unsafeBytes views s as bytes without copying; they must not be modified.
func unsafeBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// maxResponseGrants bounds the pending allow_responses grants of one
// connection; expired ones are swept when it is reached.
const maxResponseGrants = 4096

// grantResponseLocked lets c publish to reply (allow_responses). Called
// with c.mu held.
func (c *client) grantResponseLocked(reply []byte, rp *auth.ResponsePermission) {
	if c.replies == nil {
		c.replies = make(map[string]*responsePerm)
	}
	now := time.Now()
	if len(c.replies) >= maxResponseGrants {
		for k, g := range c.replies {
			if now.After(g.expires) {
				delete(c.replies, k)
			}
		}
		if len(c.replies) >= maxResponseGrants {
			return
		}
	}
	c.replies[string(reply)] = &responsePerm{remaining: rp.MaxMsgs, expires: now.Add(rp.Expires)}
}
