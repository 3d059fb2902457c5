package mqtt

import (
	"sync"
	"time"

	"github.com/eclipse/paho.golang/packets"
)

// writeBuf is a pooled buffer of bytes waiting to be written.
type writeBuf struct{ b []byte }

var writeBufs = sync.Pool{New: func() any { return &writeBuf{b: make([]byte, 0, 512)} }}

// send queues a packet; it reports false once the connection is closing.
func (c *conn) send(p packets.Packet) bool { return c.sendVia(p, nil) }

// sendVia is send from a reader that flushes the connection at the end of
// its read batch (via, nil for none): see queuedLocked.
func (c *conn) sendVia(p packets.Packet, via *flushList) bool {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return false
	}
	if c.out == nil {
		c.out = writeBufs.Get().(*writeBuf)
	}
	c.out.b = appendPacket(c.out.b, p, c.version)
	return c.queuedLocked(via)
}

// sendPublish311 sends a QoS 0 PUBLISH to a 3.1.1 client, encoded
// straight into the write buffer: the delivery hot path, allocating
// nothing. via is the publishing reader's state when an MQTT client's
// reader delivers (nil otherwise), which then writes at the end of its
// read batch. It reports false once the connection is closing.
func (c *conn) sendPublish311(topic string, payload []byte, retain bool, via *flushList) bool {
	h := byte(packets.PUBLISH << 4)
	if retain {
		h |= 0x01
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return false
	}
	if c.out == nil {
		c.out = writeBufs.Get().(*writeBuf)
	}
	c.out.b = appendPublish311(c.out.b, h, topic, 0, payload)
	if !c.queuedLocked(via) {
		return false
	}
	ctr := c.counters()
	ctr.outMsgs.Add(1)
	ctr.outBytes.Add(int64(len(payload)))
	c.srv.st.outMsgs.Add(1)
	c.srv.st.outBytes.Add(int64(len(payload)))
	return true
}

// queuedLocked starts the writer for what was just queued, or cuts the
// client off as a slow consumer; c.mu is held and released. With via (a
// reader handling its read batch) the write waits for the end of the
// batch: the reader becomes the connection's writer and writes everything
// queued meanwhile at once (flushList.write); a session's pump does the
// same for the window of QoS 1/2 messages it sends. 16 MQTT publishers
// into one subscriber wrote one packet per write(2) before, which took
// half the listener's CPU.
func (c *conn) queuedLocked(via *flushList) bool {
	slow := len(c.out.b) > c.srv.cfg.MaxPending
	start := !c.writing
	c.writing = true
	c.mu.Unlock()
	switch {
	case start && slow:
		go c.writeLoop() // closeWith below finds it running
	case start && via != nil:
		via.conns = append(via.conns, c)
	case start:
		c.writeNow()
	}
	if slow {
		c.srv.st.slow.Add(1)
		c.srv.log.Warn("mqtt slow consumer cut off", "client_id", c.clientID, "pending", c.srv.cfg.MaxPending)
		c.closeWith(codeQuotaExceeded, "slow consumer", false)
		// Its writer is stuck in a write that the client does not read:
		// closing the connection ends it now rather than at the deadline.
		c.mu.Lock()
		nc := c.nc
		c.mu.Unlock()
		if nc != nil {
			_ = nc.Close()
		}
		return false
	}
	return true
}

// queueFirst marks the connection connected and queues p, the CONNACK,
// keeping the writer for the caller: when it reports true, no writer runs
// and the caller (the reader) runs writeLoop itself once the session has
// queued what it sends at once, rather than starting a goroutine.
func (c *conn) queueFirst(p packets.Packet) (start bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.connected = true
	if c.closing {
		return false
	}
	if c.out == nil {
		c.out = writeBufs.Get().(*writeBuf)
	}
	c.out.b = appendPacket(c.out.b, p, c.version)
	start = !c.writing
	c.writing = true
	return start
}

// sendPublish sends m with packet id pid (0 for QoS 0), written at the
// end of via's read batch when via is not nil. It reports false when the
// message is not sent: expired, larger than the client's maximum packet
// size, or the connection closing.
func (c *conn) sendPublish(m *outMsg, pid uint16, dup bool, via *flushList) bool {
	p := &packets.Publish{Topic: m.Topic, Payload: m.Payload, QoS: m.QoS, Retain: m.Retain, PacketID: pid, Duplicate: dup && m.QoS > 0, Properties: &packets.Properties{}}
	if c.version == version5 {
		if outProps(p.Properties, m.Header, "", m.Time, time.Now()) {
			c.srv.st.dropped.Add(1)
			return false
		}
		ids := m.subIDs
		if ids == nil && c.sess != nil {
			ids = c.sess.matchIDs(m.Topic)
		}
		if len(ids) > 0 {
			// paho encodes one identifier; the first matching one is sent.
			id := ids[0]
			p.Properties.SubscriptionIdentifier = &id
		}
	}
	return c.sendMsg(p, via)
}

// sendReply sends a reply to an MQTT 5 request on its response topic.
func (c *conn) sendReply(m *outMsg, correlation []byte) {
	p := &packets.Publish{Topic: m.Topic, Payload: m.Payload, Properties: &packets.Properties{}}
	outProps(p.Properties, m.Header, "", m.Time, time.Now())
	p.Properties.CorrelationData = correlation
	c.sendMsg(p, nil)
}

func (c *conn) sendMsg(p *packets.Publish, via *flushList) bool {
	if mp := c.maxPacket(); mp > 0 {
		// [MQTT-3.1.2-24]: never send a packet above the client's maximum.
		size := len(appendPacket(nil, p, c.version))
		if size > int(mp) {
			c.srv.st.dropped.Add(1)
			return false
		}
	}
	if !c.sendVia(p, via) {
		return false
	}
	ctr := c.counters()
	ctr.outMsgs.Add(1)
	ctr.outBytes.Add(int64(len(p.Payload)))
	c.srv.st.outMsgs.Add(1)
	c.srv.st.outBytes.Add(int64(len(p.Payload)))
	return true
}

// closeWith closes the connection: an MQTT 5 client that completed
// CONNECT is sent DISCONNECT with code and reason first (server-sent
// DISCONNECT, §3.14), a 3.1.1 client is just closed. countErr counts it
// as a protocol error. The writer flushes what is queued and closes nc;
// a parked connection leaves the poller first.
func (c *conn) closeWith(code byte, reason string, countErr bool) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	if c.connected && c.version == version5 {
		d := &packets.Disconnect{ReasonCode: code, Properties: &packets.Properties{}}
		if c.problemInfo && reason != "" {
			d.Properties.ReasonString = reason
		}
		if c.out == nil {
			c.out = writeBufs.Get().(*writeBuf)
		}
		c.out.b = appendPacket(c.out.b, d, c.version)
	}
	c.closing = true
	if c.registered {
		// Before nc closes: its descriptor may be reused at once.
		c.srv.poller.remove(c)
		if c.parked {
			c.srv.st.parked.Add(-1)
		}
		c.registered, c.parked = false, false
	}
	start := !c.writing
	c.writing = true
	c.mu.Unlock()
	if start {
		go c.writeLoop()
	}
	if countErr {
		c.srv.st.protoErrs.Add(1)
	}
	c.srv.log.Debug("mqtt connection closed", "client_id", c.clientID, "code", code, "reason", reason)
}

// writeNow is the writer of what was just queued when none ran (the
// caller set c.writing): on a plain TCP socket it writes what the socket
// takes at once with one non-blocking write on the caller's goroutine, so
// a client that keeps up costs no writer goroutine per packet; what is
// left, and a TLS connection's bytes, go to a writer goroutine.
func (c *conn) writeNow() {
	c.mu.Lock()
	w := c.out
	inline := w != nil && c.fd >= 0 && !c.closing && (c.nc == nil || detachable(c.nc))
	if inline {
		c.out = nil
	}
	c.mu.Unlock()
	if !inline {
		go c.writeLoop()
		return
	}
	rest := writeFD(c.fd, w.b) // the writer's own: fd stays open while it runs
	c.mu.Lock()
	if len(rest) > 0 {
		// What the socket did not take goes first, then what came since.
		w.b = w.b[:copy(w.b, rest)]
		if c.out != nil {
			w.b = append(w.b, c.out.b...)
			putWriteBuf(c.out)
		}
		c.out = w
		c.mu.Unlock()
		go c.writeLoop()
		return
	}
	putWriteBuf(w)
	if c.out != nil || c.closing {
		c.mu.Unlock()
		go c.writeLoop()
		return
	}
	c.writing = false
	c.queueDetachLocked()
	c.mu.Unlock()
}

// putWriteBuf puts w back in its pool.
func putWriteBuf(w *writeBuf) {
	if cap(w.b) > maxPooledBuf {
		w.b = make([]byte, 0, 512)
	}
	w.b = w.b[:0]
	writeBufs.Put(w)
}

// queueDetachLocked has the sweeper detach a parked connection whose
// writer just ended still attached; c.mu is held.
func (c *conn) queueDetachLocked() {
	if c.parked && c.nc != nil && !c.detachQueue && detachable(c.nc) {
		// The sweeper detaches it later: a subscriber whose socket fills
		// up again at once keeps its connection.
		c.detachQueue = true
		c.srv.poller.queueDetach(c)
	}
}

// writeLoop writes what send queued until there is nothing left; once the
// connection is closing it flushes the rest (a final DISCONNECT), closes
// nc and, when no reader runs, finishes the connection.
func (c *conn) writeLoop() {
	for {
		c.mu.Lock()
		w := c.out
		c.out = nil
		closing := c.closing
		if w == nil && !closing {
			c.writing = false
			c.queueDetachLocked()
			c.mu.Unlock()
			return
		}
		nc := c.nc
		c.mu.Unlock()
		if w == nil {
			break
		}
		b := w.b
		if nc == nil && len(b) > 0 {
			// Detached: what the socket takes now needs no connection.
			b = writeFD(c.fd, b)
			if len(b) > 0 {
				var err error
				if nc, err = c.attach(); err != nil {
					c.closeWith(codeUnspecified, "write: "+err.Error(), false)
					b = nil
				}
			}
		}
		if len(b) > 0 {
			deadline := c.srv.cfg.WriteDeadline
			if closing {
				deadline = min(deadline, time.Second)
			}
			_ = nc.SetWriteDeadline(time.Now().Add(deadline))
			if _, err := nc.Write(b); err != nil {
				c.closeWith(codeUnspecified, "write: "+err.Error(), false)
			}
		}
		putWriteBuf(w)
	}
	c.mu.Lock()
	if c.nc != nil {
		_ = c.nc.Close()
	}
	if c.fd >= 0 {
		closeFD(c.fd) // out of the poller already (closeWith)
	}
	c.writing = false
	fin := !c.reading && !c.finished
	c.finished = c.finished || fin
	c.mu.Unlock()
	if fin {
		c.finish()
	}
}
