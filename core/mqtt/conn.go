package mqtt

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/subject"
)

// conn is one client network connection. It holds no goroutine of its
// own while idle: a reader goroutine runs while the client sends (the
// only code that reads nc and handles the client's packets) and, on a
// parkable connection, ends after Config.ParkAfter without a byte,
// leaving the socket in the Server's poller, which starts a new reader
// when bytes arrive; a writer goroutine runs while out holds bytes (the
// only code that writes nc, taking whatever out holds in one write). The
// connection ends (finish) once it is closing and neither runs.
type conn struct {
	srv *Server
	// nc is the connection. A parked connection with no writer lets it
	// go (detach): the Go runtime's descriptor, buffers and poller entry
	// are freed, fd keeps the socket, and a reader or a writer that
	// needs it makes a new one from fd (attach). Written under mu, by the
	// reader or the writer, never while the other uses it.
	nc     net.Conn
	remote netip.AddrPort // the client's address, when TCP
	id     uint64
	start  int64 // unix nanoseconds

	// Set by the reader during CONNECT, read-only after (info reads them
	// under mu once connected is set).
	clientID  string
	ident     *auth.Identity
	sess      *session
	will      *will
	aliases   map[uint16]string
	keepAlive time.Duration
	rs        *readState // the running reader's buffers; nil while parked

	clientMaxPacket  uint32
	clientReceiveMax uint16
	version          byte
	problemInfo      bool
	fd               int32       // a descriptor of the socket of its own, for the poller; -1: not parkable
	detachDue        atomic.Bool // parked, attached, no writer: the sweeper detaches it

	lastActivity      atomic.Int64
	inMsgs, inBytes   atomic.Int64
	outMsgs, outBytes atomic.Int64

	mu         sync.Mutex
	out        *writeBuf // bytes waiting for the writer; nil when none
	connected  bool
	closing    bool
	reading    bool // a reader goroutine runs
	writing    bool // a writer goroutine runs
	parked     bool // no reader: the poller waits for bytes
	registered bool // fd is in the poller's set
	finished   bool
	graceful   bool // DISCONNECT 0x00 received: no will (set by the reader)
}

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

// writeBuf is a pooled buffer of bytes waiting to be written.
type writeBuf struct{ b []byte }

// readState is a running reader's pooled buffers: what it has read and
// not yet handled, and scratch space for a publish's subject and header.
type readState struct {
	buf, subj, hdr []byte
}

// Sizes of a connection's buffers.
const (
	readBufferIdle = 512      // readBufferIdle is the size a read buffer starts at.
	readBufferBusy = 4096     // readBufferBusy is the most reads that fill it grow it to; a larger packet grows it further, until it is handled.
	maxPooledBuf   = 64 << 10 // maxPooledBuf is the largest buffer put back in a pool.
)

var (
	writeBufs  = sync.Pool{New: func() any { return &writeBuf{b: make([]byte, 0, 512)} }}
	readStates = sync.Pool{New: func() any { return &readState{buf: make([]byte, 0, readBufferIdle)} }}
)

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

func newConn(srv *Server, nc net.Conn, id uint64) *conn {
	now := time.Now().UnixNano()
	c := &conn{srv: srv, nc: nc, id: id, start: now, clientReceiveMax: 65535, fd: -1, reading: true}
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		c.remote = ta.AddrPort()
	}
	if srv.poller != nil {
		c.fd = dupFD(nc)
	}
	c.lastActivity.Store(now)
	return c
}

// send queues a packet; it reports false once the connection is closing.
func (c *conn) send(p packets.Packet) bool {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return false
	}
	if c.out == nil {
		c.out = writeBufs.Get().(*writeBuf)
	}
	c.out.b = appendPacket(c.out.b, p, c.version)
	slow := len(c.out.b) > c.srv.cfg.MaxPending
	start := !c.writing
	c.writing = true
	c.mu.Unlock()
	if start {
		go c.writeLoop()
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

// sendInline queues p like send and, when no writer runs, writes it on
// the caller's goroutine (the reader's) rather than starting one: the
// CONNACK, to a socket that has had nothing written to it yet.
func (c *conn) sendInline(p packets.Packet) {
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	if c.out == nil {
		c.out = writeBufs.Get().(*writeBuf)
	}
	c.out.b = appendPacket(c.out.b, p, c.version)
	start := !c.writing
	c.writing = true
	c.mu.Unlock()
	if start {
		c.writeLoop()
	}
}

func (c *conn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// sendPublish sends m with packet id pid (0 for QoS 0). It reports false
// when the message is not sent: expired, larger than the client's
// maximum packet size, or the connection closing.
func (c *conn) sendPublish(m *outMsg, pid uint16, dup bool) bool {
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
	return c.sendMsg(p)
}

// sendReply sends a reply to an MQTT 5 request on its response topic.
func (c *conn) sendReply(m *outMsg, correlation []byte) {
	p := &packets.Publish{Topic: m.Topic, Payload: m.Payload, Properties: &packets.Properties{}}
	outProps(p.Properties, m.Header, "", m.Time, time.Now())
	p.Properties.CorrelationData = correlation
	c.sendMsg(p)
}

func (c *conn) sendMsg(p *packets.Publish) bool {
	if c.clientMaxPacket > 0 {
		// [MQTT-3.1.2-24]: never send a packet above the client's maximum.
		size := len(appendPacket(nil, p, c.version))
		if size > int(c.clientMaxPacket) {
			c.srv.st.dropped.Add(1)
			return false
		}
	}
	if !c.send(p) {
		return false
	}
	c.outMsgs.Add(1)
	c.outBytes.Add(int64(len(p.Payload)))
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
			if c.parked && c.nc != nil {
				// The sweeper detaches it later: a subscriber whose
				// socket fills up again at once keeps its connection.
				c.detachDue.Store(true)
			}
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
		if cap(w.b) > maxPooledBuf {
			w.b = make([]byte, 0, 512)
		}
		w.b = w.b[:0]
		writeBufs.Put(w)
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
		c.rs = rs
		park := c.readPackets(rs)
		c.rs = nil
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

// attach returns the connection, made again from fd when detached.
func (c *conn) attach() (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc != nil {
		return c.nc, nil
	}
	if c.closing || c.fd < 0 {
		return nil, net.ErrClosed
	}
	nc, err := connFromFD(c.fd)
	if err != nil {
		return nil, err
	}
	c.nc = nc
	return nc, nil
}

// detachLocked lets a parked connection with no writer go, keeping fd;
// c.mu is held.
func (c *conn) detachLocked() {
	if c.nc == nil || c.writing || c.reading || c.closing || c.fd < 0 {
		return
	}
	_ = c.nc.Close()
	c.nc = nil
}

// park hands the idle connection to the poller; it reports false when
// the connection is closing or the poller refuses it (the reader then
// goes on reading).
func (c *conn) park() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	if err := c.srv.poller.arm(c, !c.registered); err != nil {
		c.srv.log.Debug("mqtt connection not parked", "client_id", c.clientID, "err", err)
		return false
	}
	c.registered, c.parked, c.reading = true, true, false
	c.srv.st.parks.Add(1)
	c.srv.st.parked.Add(1)
	c.detachLocked()
	return true
}

// wakeRead starts a reader for a parked connection that has bytes to
// read (or was closed by the client); the poller calls it.
func (c *conn) wakeRead() {
	c.mu.Lock()
	if !c.parked || c.closing {
		c.mu.Unlock()
		return
	}
	c.parked, c.reading = false, true
	c.mu.Unlock()
	c.srv.st.parked.Add(-1)
	go c.readLoop()
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
		used, perr := c.process(buf)
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
func (c *conn) process(b []byte) (int, error) {
	used := 0
	for {
		header, body, n, err := splitPacket(b[used:], c.srv.cfg.MaxPacketSize)
		if err != nil || n == 0 {
			return used, err
		}
		used += n
		p, err := decodePacket(header, body, c.version)
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
		if err := c.handle(p); err != nil {
			return used, err
		}
		if c.isClosing() {
			return used, nil
		}
	}
}

// handle dispatches one decoded packet.
func (c *conn) handle(p packets.Packet) error {
	switch p := p.(type) {
	case *packets.Connect:
		return c.handleConnect(p)
	case *packets.Publish:
		return c.handlePublish(p)
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

// anonymous is the identity of every client when there is no
// authenticator; it is never changed.
var anonymous = auth.Identity{Account: auth.GlobalAccount}

func randomClientID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "leafbox-" + hex.EncodeToString(b[:])
}

// connackFail answers CONNECT with a failure code and ends the connection.
func (c *conn) connackFail(code byte, reason string) error {
	ack := &packets.Connack{ReasonCode: code, Properties: &packets.Properties{}}
	if c.version == version5 && reason != "" {
		ack.Properties.ReasonString = reason
	}
	c.send(ack)
	return &ProtocolError{Code: code, Reason: reason}
}

func (c *conn) handleConnect(p *packets.Connect) error {
	c.version = p.ProtocolVersion
	props := p.Properties
	c.problemInfo = c.version == version5 && (props.RequestProblemInfo == nil || *props.RequestProblemInfo == 1)
	clean := p.CleanStart
	assigned := ""
	if p.ClientID == "" {
		if c.version == version311 && !clean {
			// [MQTT-3.1.3-8]: CONNACK 0x02, identifier rejected.
			return c.connackFail(codeClientIDInvalid, "empty client id needs clean session")
		}
		p.ClientID = randomClientID()
		assigned = p.ClientID
	}
	c.clientID = p.ClientID

	creds := auth.Credentials{User: p.Username, Pass: string(p.Password)}
	if p.Username == "" && len(p.Password) > 0 {
		// A token is sent as the password without a user name.
		creds = auth.Credentials{Token: string(p.Password)}
	}
	ident := &anonymous
	if a := c.srv.auth.Load().a; a != nil {
		id, err := a.Authenticate(creds, "")
		if err != nil && p.Username != "" && len(p.Password) > 0 {
			// A token in the password field, with any user name (3.1.1
			// allows no password without one), as nats-server's MQTT.
			id, err = a.Authenticate(auth.Credentials{Token: string(p.Password)}, "")
		}
		if err != nil {
			c.srv.st.authFails.Add(1)
			c.srv.log.Info("mqtt authentication failed", "client_id", c.clientID, "remote", c.nc.RemoteAddr().String(), "err", err)
			code := codeNotAuthorized
			if p.UsernameFlag || p.PasswordFlag {
				code = codeBadUserOrPassword
			}
			return c.connackFail(code, "not authorized")
		}
		ident = id
	}
	c.ident = ident

	// Keep alive and its bounds.
	ka := time.Duration(p.KeepAlive) * time.Second
	serverKA := ka
	if mx := c.srv.cfg.MaxKeepAlive; mx > 0 && (ka == 0 || ka > mx) {
		serverKA = mx
	}
	if mn := c.srv.cfg.MinKeepAlive; mn > 0 && ka > 0 && ka < mn {
		serverKA = mn
	}
	if c.version == version311 && serverKA < ka {
		ka = serverKA // hold a 3.1.1 client to the maximum
	} else if c.version == version5 {
		ka = serverKA
	}
	c.keepAlive = ka
	if tc, ok := c.nc.(*net.TCPConn); ok && ka == 0 {
		// No MQTT keep alive: TCP's finds a dead client (Listen leaves it
		// off for the others).
		_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true})
	}

	expiry := uint32(0)
	if c.version == version311 {
		if !clean {
			expiry = neverExpires
		}
	} else {
		if props.SessionExpiryInterval != nil {
			expiry = *props.SessionExpiryInterval
		}
		if props.ReceiveMaximum != nil {
			if *props.ReceiveMaximum == 0 {
				return protocolErr("receive maximum 0") // [MQTT-3.1.2-?] §3.1.2.11.3
			}
			c.clientReceiveMax = *props.ReceiveMaximum
		}
		if props.MaximumPacketSize != nil {
			if *props.MaximumPacketSize == 0 {
				return protocolErr("maximum packet size 0") // §3.1.2.11.4
			}
			c.clientMaxPacket = *props.MaximumPacketSize
		}
	}

	if p.WillFlag {
		w, err := c.buildWill(p)
		if err != nil {
			return c.connackFail(codeTopicNameInvalid, err.Error())
		}
		if ident.Perms != nil && !ident.Perms.CanPublish(w.subj) {
			return c.connackFail(codeNotAuthorized, "will topic not allowed")
		}
		c.will = w
	}

	sess, present := c.srv.attach(c, ident, clean, expiry, c.version)
	c.sess = sess

	ack := &packets.Connack{SessionPresent: present, Properties: &packets.Properties{}}
	if c.version == version5 {
		ap := ack.Properties
		rm := uint16(c.srv.cfg.MaxInflight)
		ap.ReceiveMaximum = &rm
		mp := uint32(c.srv.cfg.MaxPacketSize)
		ap.MaximumPacketSize = &mp
		ta := uint16(DefaultTopicAliasMax)
		ap.TopicAliasMaximum = &ta
		one := byte(1)
		ap.RetainAvailable, ap.WildcardSubAvailable, ap.SubIDAvailable, ap.SharedSubAvailable = &one, &one, &one, &one
		if assigned != "" {
			ap.AssignedClientID = assigned
		}
		if serverKA != time.Duration(p.KeepAlive)*time.Second {
			k := uint16(serverKA / time.Second)
			ap.ServerKeepAlive = &k
		}
	}
	c.mu.Lock()
	c.connected = true
	c.mu.Unlock()
	c.sendInline(ack)
	_ = c.nc.SetReadDeadline(c.readDeadline(time.Now()))
	sess.attachConn(c)
	return nil
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

// handlePublish routes a client's PUBLISH and acknowledges it.
func (c *conn) handlePublish(p *packets.Publish) error {
	if c.version == version5 {
		if a := p.Properties.TopicAlias; a != nil {
			// §3.3.2.3.4
			if *a == 0 || *a > DefaultTopicAliasMax {
				return &ProtocolError{Code: codeTopicAliasInvalid, Reason: "topic alias out of range"}
			}
			if c.aliases == nil {
				c.aliases = map[uint16]string{}
			}
			if p.Topic == "" {
				t, ok := c.aliases[*a]
				if !ok {
					return protocolErr("unknown topic alias %d", *a)
				}
				p.Topic = t
			} else {
				c.aliases[*a] = p.Topic
			}
		}
	}
	var err error
	rs := c.rs
	rs.subj, err = subject.AppendSubjectFromTopic(rs.subj[:0], p.Topic)
	if err != nil {
		// [MQTT-3.3.2-2]: no wildcards in a topic name.
		return &ProtocolError{Code: codeTopicNameInvalid, Reason: err.Error()}
	}
	subj := rs.subj
	c.inMsgs.Add(1)
	c.inBytes.Add(int64(len(p.Payload)))
	c.srv.st.inMsgs.Add(1)
	c.srv.st.inBytes.Add(int64(len(p.Payload)))
	sess := c.sess
	if p.QoS == 2 {
		sess.mu.Lock()
		dup := sess.incoming[p.PacketID]
		n := len(sess.incoming)
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
	} else if err := c.route(p, subj); err != nil {
		if c.version == version311 {
			// No negative acknowledgement in 3.1.1: close, and the client
			// sends the message again on its next connection.
			return err
		}
		ackCode = codeUnspecified
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
		c.send(&packets.Puback{PacketID: p.PacketID, ReasonCode: ackCode, Properties: ackProps})
	case 2:
		if ackCode == codeSuccess {
			sess.mu.Lock()
			if sess.incoming == nil {
				sess.incoming = map[uint16]bool{}
			}
			sess.incoming[p.PacketID] = true
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
func (c *conn) route(p *packets.Publish, subj []byte) error {
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
	rs := c.rs
	rs.hdr = appendPublishHeader(rs.hdr[:0], p, p.Properties.ResponseTopic)
	hdr := rs.hdr
	if p.Retain {
		if err := c.srv.setRetained(c.ident.Account, p, hdr); err != nil {
			return err
		}
	}
	if p.QoS > 0 && c.srv.cfg.Durable != nil {
		return c.srv.cfg.Durable.PublishDurable(c.ident.Account, string(subj), reply, hdr, p.Payload)
	}
	sess.publish(subj, reply, hdr, p.Payload)
	return nil
}

func (c *conn) handlePubrel(p *packets.Pubrel) error {
	sess := c.sess
	sess.mu.Lock()
	known := sess.incoming[p.PacketID]
	delete(sess.incoming, p.PacketID)
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
	sess := c.sess
	if !sess.detachConn(c) {
		// Taken over: the new connection owns the session now. The will
		// goes out unless the session lives on and the will had a delay,
		// which the new connection came back within (§3.1.2.5).
		if c.will != nil && !c.graceful {
			sess.mu.Lock()
			resumed := !sess.ended && sess.conn != nil
			sess.mu.Unlock()
			if !resumed || c.will.delay == 0 {
				c.srv.publishWill(c.ident.Account, c.will)
			}
		}
		return
	}
	if c.will == nil || c.graceful {
		return
	}
	sess.mu.Lock()
	delay := min(c.will.delay, sess.expiry)
	ended := sess.ended
	sess.mu.Unlock()
	if delay == 0 || ended {
		c.srv.publishWill(c.ident.Account, c.will)
		return
	}
	w, account := c.will, c.ident.Account
	sess.mu.Lock()
	// A new connection that took the session over since the detach came
	// back within the delay: no will (attachConn ran before this timer).
	if sess.conn == nil {
		sess.willT = time.AfterFunc(time.Duration(delay)*time.Second, func() { c.srv.publishWill(account, w) })
	}
	sess.mu.Unlock()
}

// info describes the connection for monitoring.
func (c *conn) info() (ConnInfo, bool) {
	c.mu.Lock()
	ok := c.connected
	c.mu.Unlock()
	if !ok {
		return ConnInfo{}, false
	}
	i := ConnInfo{
		ID: c.id, ClientID: c.clientID, Version: c.version, Start: time.Unix(0, c.start),
		LastActivity: time.Unix(0, c.lastActivity.Load()), User: c.ident.User, Account: c.ident.Account,
		InMsgs: c.inMsgs.Load(), OutMsgs: c.outMsgs.Load(), InBytes: c.inBytes.Load(), OutBytes: c.outBytes.Load(),
	}
	c.mu.Lock()
	if c.out != nil {
		i.Pending = len(c.out.b)
	}
	i.Parked = c.parked
	nc := c.nc
	c.mu.Unlock()
	if c.remote.IsValid() {
		i.Remote = net.TCPAddrFromAddrPort(c.remote)
	} else if nc != nil {
		i.Remote = nc.RemoteAddr()
	}
	if s := c.sess; s != nil {
		s.mu.Lock()
		i.Subs = len(s.subs)
		s.mu.Unlock()
	}
	if tc, ok := nc.(*tls.Conn); ok {
		i.TLSVersion = tc.ConnectionState().Version
	}
	return i, true
}
