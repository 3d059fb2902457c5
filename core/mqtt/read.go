package mqtt

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/eclipse/paho.golang/packets"
)

// readState is a running reader's pooled buffers: what it has read and
// not yet handled, and scratch space for a publish's subject and header.
type readState struct {
	buf, subj, hdr []byte
	// pub is the 3.1.1 PUBLISH being handled, decoded in place
	// (decodePublish311).
	pub packets.Publish
	// flush lists the connections this reader's batch queued bytes for
	// and must write (it is their writer until then): see queuedLocked.
	flush flushList
}

// flushList is the connections a goroutine queued bytes for and must
// write, having become their writer (see queuedLocked).
type flushList struct{ conns []*conn }

// write writes what was queued for each connection: once per connection
// and batch.
func (f *flushList) write() {
	for i, t := range f.conns {
		t.writeNow()
		f.conns[i] = nil
	}
	f.conns = f.conns[:0]
}

// Sizes of a connection's buffers.
const (
	readBufferIdle = 512      // readBufferIdle is the size a read buffer starts at.
	readBufferBusy = 4096     // readBufferBusy is the most reads that fill it grow it to; a larger packet grows it further, until it is handled.
	maxPooledBuf   = 64 << 10 // maxPooledBuf is the largest buffer put back in a pool.
)

var readStates = sync.Pool{New: func() any { return &readState{buf: make([]byte, 0, readBufferIdle)} }}

func getReadState() *readState { return readStates.Get().(*readState) }

func putReadState(rs *readState) {
	if cap(rs.buf) > readBufferBusy {
		rs.buf = make([]byte, 0, readBufferIdle)
	}
	if cap(rs.subj) > maxPooledBuf {
		rs.subj = nil
	}
	if cap(rs.hdr) > maxPooledBuf {
		rs.hdr = nil
	}
	rs.buf = rs.buf[:0]
	readStates.Put(rs)
}

// readLoop runs the connection's reader: it reads and handles packets
// until the connection closes or, on a parkable connection, until it has
// been idle for Config.ParkAfter, when it parks the connection in the
// poller and ends, its buffers back in their pool.
func (c *conn) readLoop() {
	if _, err := c.attach(); err != nil {
		c.closeWith(codeUnspecified, "read: "+err.Error(), false)
		c.readerDone()
		return
	}
	for {
		rs := getReadState()
		park := c.readPackets(rs)
		putReadState(rs)
		if !park {
			break
		}
		if c.park() {
			return
		}
	}
	c.readerDone()
}

// readerDone ends the reader of a closing connection, finishing it when
// the writer is done too.
func (c *conn) readerDone() {
	c.mu.Lock()
	c.reading = false
	fin := c.closing && !c.writing && !c.finished
	c.finished = c.finished || fin
	c.mu.Unlock()
	if fin {
		c.finish()
	}
}

// readDeadline returns the next read's deadline: the connect timeout
// before CONNECT; after it, 1.5 times the keep alive from the last
// activity [MQTT-3.1.2-24] and, on a parkable connection, ParkAfter from
// now, whichever is first (zero: none).
func (c *conn) readDeadline(now time.Time) time.Time {
	if !c.connected {
		return time.Unix(0, c.start).Add(c.srv.cfg.ConnectTimeout)
	}
	var d time.Time
	if c.keepAlive > 0 {
		d = time.Unix(0, c.lastActivity.Load()).Add(c.keepAlive * 3 / 2)
	}
	if c.fd >= 0 {
		if p := now.Add(c.srv.cfg.ParkAfter); d.IsZero() || p.Before(d) {
			d = p
		}
	}
	return d
}

// readPackets reads and handles packets until the connection closes
// (false) or is idle with nothing half read on a parkable connection
// (true).
func (c *conn) readPackets(rs *readState) (park bool) {
	// An idle connection's reader parks, releasing its buffer; a busy
	// one's buffer starts small and a read that fills it doubles it, up
	// to readBufferBusy for a client that streams packets.
	buf := rs.buf[:0]
	defer func() { rs.buf = buf }()
	full := false // full is whether the last read filled the buffer.
	_ = c.nc.SetReadDeadline(c.readDeadline(time.Now()))
	for {
		if len(buf) == cap(buf) || (full && cap(buf) < readBufferBusy) {
			nb := make([]byte, len(buf), 2*cap(buf))
			copy(nb, buf)
			buf = nb
		}
		n, err := c.nc.Read(buf[len(buf):cap(buf)])
		full = n > 0 && len(buf)+n == cap(buf)
		buf = buf[:len(buf)+n]
		if n > 0 {
			now := time.Now()
			c.lastActivity.Store(now.UnixNano())
			if c.connected {
				_ = c.nc.SetReadDeadline(c.readDeadline(now))
			}
		}
		used, perr := c.process(buf, rs)
		rs.flush.write()
		if perr != nil {
			var pe *ProtocolError
			if errors.As(perr, &pe) {
				c.srv.log.Debug("mqtt protocol error", "client_id", c.clientID, "remote", c.nc.RemoteAddr().String(), "err", perr)
				c.closeWith(pe.Code, pe.Reason, true)
			} else {
				c.closeWith(codeUnspecified, perr.Error(), false)
			}
			return false
		}
		buf = buf[:copy(buf, buf[used:])]
		if cap(buf) > maxPooledBuf && len(buf) < readBufferBusy {
			buf = append(make([]byte, 0, readBufferBusy), buf...)
		}
		if err != nil {
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout() && c.connected:
				now := time.Now()
				if c.keepAlive > 0 && now.Sub(time.Unix(0, c.lastActivity.Load())) >= c.keepAlive*3/2 {
					c.closeWith(codeKeepAliveTimeout, "keep alive timeout", false)
					return false
				}
				if c.fd >= 0 && len(buf) == 0 && !c.isClosing() {
					return true
				}
				_ = c.nc.SetReadDeadline(c.readDeadline(now))
				continue
			case errors.Is(err, io.EOF):
				c.closeWith(codeUnspecified, "", false)
			default:
				c.closeWith(codeUnspecified, err.Error(), false)
			}
			return false
		}
		if c.isClosing() {
			return false
		}
	}
}

// process handles every complete packet in b and returns the bytes used.
func (c *conn) process(b []byte, rs *readState) (int, error) {
	used := 0
	for {
		header, body, n, err := splitPacket(b[used:], c.srv.cfg.MaxPacketSize)
		if err != nil || n == 0 {
			return used, err
		}
		used += n
		var p packets.Packet
		if c.version == version311 && header>>4 == packets.PUBLISH {
			// The hot path: decoded into the reader's Publish, no copy.
			if err = checkFlags(header); err == nil {
				err = decodePublish311(&rs.pub, header, body)
			}
			p = &rs.pub
		} else {
			p, err = decodePacket(header, body, c.version)
		}
		if err != nil {
			if pe, ok := err.(*ProtocolError); ok && !c.connected && (pe.Code == codeUnsupportedVersion || pe.Code == codeBadAuthMethod) {
				// [MQTT-3.1.2-2]: CONNACK 0x01 (3.1.1) / 0x84, then close;
				// an authentication method leafbox lacks: CONNACK 0x8C
				// (§4.12).
				c.version = version311
				if len(body) > 6 && body[6] == version5 {
					c.version = version5
				}
				c.send(&packets.Connack{ReasonCode: pe.Code, Properties: &packets.Properties{}})
			}
			return used, err
		}
		if err := c.handle(p, rs); err != nil {
			return used, err
		}
		if c.isClosing() {
			return used, nil
		}
	}
}

// handle dispatches one decoded packet.
func (c *conn) handle(p packets.Packet, rs *readState) error {
	switch p := p.(type) {
	case *packets.Connect:
		return c.handleConnect(p)
	case *packets.Publish:
		return c.handlePublish(p, rs)
	case *packets.Puback:
		if !c.sess.ack(p.PacketID) {
			c.srv.log.Debug("mqtt PUBACK for an unknown packet id", "client_id", c.clientID, "pid", p.PacketID)
		}
	case *packets.Pubrec:
		if !c.sess.pubrec(p.PacketID) {
			// §4.3.3: answer PUBREL with "packet identifier not found".
			c.send(&packets.Pubrel{PacketID: p.PacketID, ReasonCode: codePacketIDNotFound, Properties: &packets.Properties{}})
			return nil
		}
		c.send(&packets.Pubrel{PacketID: p.PacketID, Properties: &packets.Properties{}})
	case *packets.Pubrel:
		return c.handlePubrel(p)
	case *packets.Pubcomp:
		c.sess.ack(p.PacketID)
	case *packets.Subscribe:
		return c.handleSubscribe(p)
	case *packets.Unsubscribe:
		return c.handleUnsubscribe(p)
	case *packets.Pingreq:
		c.send(&packets.Pingresp{})
	case *packets.Disconnect:
		return c.handleDisconnect(p)
	}
	return nil
}
