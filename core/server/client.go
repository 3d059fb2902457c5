package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/sublist"
)

// Read buffer sizes: a connection starts small and grows while its reads
// fill the buffer, then shrinks back when it goes quiet.
const (
	minReadBuffer   = 512
	startReadBuffer = 4 << 10
	maxReadBuffer   = 64 << 10
	// shrinkAfter is how many short reads in a row shrink the buffer.
	shrinkAfter = 4
	// maxSpareOutbound caps the outbound buffer kept for reuse after a
	// burst, so an idle connection does not pin a large buffer.
	maxSpareOutbound = 64 << 10
	// maxKeptOutbound caps the buffer kept while a backlog drains: a busy
	// connection reuses up to this much, larger bursts are left to the GC.
	maxKeptOutbound = 1 << 20
	// maxStallBacklog is the backlog at which producers start waiting for
	// a consumer (see stalledWait), whatever MaxPending allows: a short
	// queue keeps memory low and latency bounded while a consumer keeps
	// up; MaxPending still decides when one is cut off.
	maxStallBacklog = 1 << 20
)

// client is one client connection.
type client struct {
	srv      *Server
	cid      uint64
	conn     net.Conn
	start    time.Time
	host     string
	port     int
	nonce    string
	tlsConn  *tls.Conn
	tlsFirst bool // TLS handshake before INFO

	// Limits fixed when the connection starts.
	maxPending    int64
	stallAt       int64 // pending bytes that close the stall gate
	writeDeadline time.Duration

	// Fields written by readLoop only (before or during CONNECT); read
	// elsewhere under mu.
	parser     *proto.Parser
	flushes    map[*client]struct{}        // clients this read batch wrote to
	lastFlush  *client                     // the last client added to flushes
	stallTotal time.Duration               // time this read batch waited on consumers
	stallTimer *time.Timer                 // reused by stalledWait
	batch      batchStats                  // counters of this read batch
	memo       sublist.Memo[*subscription] // the last PUB subject's match, this read batch

	connected    atomic.Bool                   // CONNECT accepted
	ident        atomic.Pointer[auth.Identity] // who the connection is
	lastActivity atomic.Int64                  // unix nanoseconds of the last read

	mu            sync.Mutex
	cond          *sync.Cond
	out           []byte        // pending outbound bytes
	spare         []byte        // buffer reused after a write
	inFlight      int           // bytes being written
	writing       bool          // a goroutine is writing conn (writeLoop or flushInlineLocked)
	lastWrite     time.Duration // when the last write ended, since start
	lastWriteDur  time.Duration // how long it took
	wakePending   bool          // writeLoop was woken for what is in out (flushInProcessLocked)
	stall         chan struct{} // closed when a backlog drains; see stalledWait
	closing       bool          // no more output accepted
	flushAndClose bool          // writeLoop writes what is pending, then closes
	reason        closeReason
	stop          time.Time
	connectOpts   proto.Connect
	creds         auth.Credentials
	acc           *account
	subs          map[string]*subscription
	replies       map[string]*responsePerm // allow_responses grants
	pingsOut      int
	firstPong     bool // the PONG to the first PING has been sent
	rtt           time.Duration
	rttStart      time.Time
	pingTimer     *time.Timer
	authTimer     *time.Timer

	// Flags copied from CONNECT, read on the hot path by other clients
	// under mu. acc and these are written only by processConnect, on the
	// read loop, which therefore reads them without mu (processPub).
	echo, headers, noResponders, verbose, pedantic bool

	stats clientStats
	// Messages and bytes delivered to this client, counted by deliver,
	// which holds mu anyway (the in counters are batched per read).
	outMsgs, outBytes int64

	// Inline writes (see flushInlineLocked): raw is nil when the
	// connection cannot be written that way. rawWrite, rawBuf and rawN
	// belong to the goroutine that set writing.
	raw      syscall.RawConn
	rawWrite func(fd uintptr) bool
	rawBuf   []byte
	rawN     int
	// combine gathers one message's deliveries to combined connections
	// (read loop only).
	combine combineBatch
}

// clientStats are per-connection counters, read by monitoring.
type clientStats struct {
	inMsgs, inBytes atomic.Int64
	stalls          atomic.Int64
}

// batchStats are counted by the read loop without atomics and added to
// the shared counters once per read batch, so publishers on different
// cores do not contend on every message.
type batchStats struct {
	inMsgs, inBytes, outMsgs, outBytes int64
}

// responsePerm is one reply subject a client may publish to because it
// received a request with it.
type responsePerm struct {
	remaining int
	expires   time.Time
}

// serveConn runs one connection until it closes.
func (s *Server) serveConn(conn net.Conn) {
	defer s.connsDone.Done()
	opts := s.options()
	c := &client{
		srv:           s,
		cid:           s.nextCID.Add(1),
		conn:          conn,
		start:         time.Now(),
		subs:          make(map[string]*subscription),
		flushes:       make(map[*client]struct{}),
		echo:          true,
		maxPending:    opts.MaxPending,
		stallAt:       min(opts.MaxPending/4*3, maxStallBacklog),
		writeDeadline: opts.WriteDeadline,
		acc:           s.lookupAccount(auth.GlobalAccount),
	}
	c.lastActivity.Store(c.start.UnixNano())
	c.cond = sync.NewCond(&c.mu)
	if a, ok := conn.RemoteAddr().(*net.TCPAddr); ok {
		c.host, c.port = a.IP.String(), a.Port
	}
	c.parser = proto.NewParser(proto.ClientOps, proto.Limits{
		MaxControlLine: int(opts.MaxControlLine),
		MaxPayload:     int(opts.MaxPayload),
	})
	authn := s.authHandler.Load()
	if authn.NeedsNonce() {
		c.nonce = auth.NewNonce()
	}

	if opts.TLSHandshakeFirst {
		if !c.handshakeTLS(opts) {
			return
		}
	}
	if !s.register(c, opts) {
		return
	}
	s.stats.totalConnections.Add(1)
	c.logCreated()

	c.mu.Lock()
	c.out = c.appendInfo(c.out)
	c.mu.Unlock()
	if opts.TLS != nil && !opts.TLSHandshakeFirst {
		// The client upgrades right after INFO, so INFO goes out first.
		c.mu.Lock()
		err := c.writeDirect()
		c.mu.Unlock()
		if err != nil || !c.upgradeTLS(opts) {
			c.closeConnection(reasonTLSHandshake)
			s.unregister(c)
			return
		}
	}
	if authn.Required() {
		c.authTimer = time.AfterFunc(opts.AuthTimeout, func() {
			if !c.connected.Load() {
				c.sendErrAndClose("Authentication Timeout", reasonAuthTimeout)
			}
		})
	}
	c.pingTimer = time.AfterFunc(opts.PingInterval, c.pingTick)
	c.mu.Lock()
	c.initRawLocked()
	c.mu.Unlock()

	writerDone := make(chan struct{})
	go func() {
		c.writeLoop()
		close(writerDone)
	}()
	c.readLoop()
	c.closeConnection(reasonClientClosed)
	<-writerDone
	s.unregister(c)
}

// handshakeTLS performs the TLS handshake before INFO.
func (c *client) handshakeTLS(opts Options) bool {
	tc := tls.Server(c.conn, opts.TLS)
	_ = tc.SetDeadline(time.Now().Add(opts.TLSTimeout))
	if err := tc.Handshake(); err != nil {
		c.srv.log.Debug("tls handshake failed", "cid", c.cid, "addr", c.remoteAddr(), "err", err)
		_ = c.conn.Close()
		return false
	}
	_ = tc.SetDeadline(time.Time{})
	c.conn, c.tlsConn, c.tlsFirst = tc, tc, true
	return true
}

// upgradeTLS performs the TLS handshake after INFO. A client that sends
// plaintext instead gets the error official clients recognise.
func (c *client) upgradeTLS(opts Options) bool {
	_ = c.conn.SetReadDeadline(time.Now().Add(opts.TLSTimeout))
	br := bufio.NewReaderSize(c.conn, 1)
	first, err := br.Peek(1)
	if err != nil {
		return false
	}
	if first[0] != 0x16 { // not a TLS handshake record
		_, _ = c.conn.Write(proto.AppendErr(nil, "Secure Connection - TLS Required"))
		return false
	}
	tc := tls.Server(&peekedConn{Conn: c.conn, r: br}, opts.TLS)
	_ = tc.SetDeadline(time.Now().Add(opts.TLSTimeout))
	if err := tc.Handshake(); err != nil {
		c.srv.log.Debug("tls handshake failed", "cid", c.cid, "err", err)
		return false
	}
	_ = tc.SetDeadline(time.Time{})
	c.mu.Lock()
	c.conn, c.tlsConn = tc, tc
	c.raw = nil
	c.mu.Unlock()
	return true
}

// peekedConn is a net.Conn whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) {
	if p.r.Buffered() > 0 {
		return p.r.Read(b)
	}
	return p.Conn.Read(b)
}

// register adds c to the server, or refuses it when the server is full or
// shutting down.
func (s *Server) register(c *client, opts Options) bool {
	s.mu.Lock()
	switch {
	case s.shutdown || s.lameDuck:
		s.mu.Unlock()
		_ = c.conn.Close()
		return false
	case len(s.clients) >= opts.MaxConnections:
		s.mu.Unlock()
		s.refuse(c, "maximum connections exceeded", reasonMaxConnections)
		return false
	case opts.RefuseConnection != nil && opts.RefuseConnection():
		s.mu.Unlock()
		s.refuse(c, "insufficient resources", reasonResources)
		return false
	}
	s.clients[c.cid] = c
	s.mu.Unlock()
	return true
}

// refuse tells a client that is not registered why (INFO, then -ERR)
// and closes it.
func (s *Server) refuse(c *client, why string, reason closeReason) {
	b := c.appendInfo(nil)
	b = proto.AppendErr(b, why)
	_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.conn.Write(b)
	_ = c.conn.Close()
	c.reason = reason
	s.recordClosed(c)
}

// unregister removes a closed client and records it for /connz.
func (s *Server) unregister(c *client) {
	s.mu.Lock()
	delete(s.clients, c.cid)
	s.mu.Unlock()
	c.logClosed()
	s.recordClosed(c)
}

// appendInfo appends this connection's INFO line.
func (c *client) appendInfo(dst []byte) []byte {
	s := c.srv
	s.mu.Lock()
	base := s.infoJSON
	s.mu.Unlock()
	dst = append(dst, "INFO "...)
	// Splice the per-connection fields into the shared JSON object.
	dst = append(dst, base[:len(base)-1]...)
	dst = append(dst, `,"client_id":`...)
	dst = strconv.AppendUint(dst, c.cid, 10)
	if c.host != "" {
		dst = append(dst, `,"client_ip":`...)
		dst = strconv.AppendQuote(dst, c.host)
	}
	if c.nonce != "" {
		dst = append(dst, `,"nonce":`...)
		dst = strconv.AppendQuote(dst, c.nonce)
	}
	dst = append(dst, "}\r\n"...)
	return dst
}

// readLoop reads and processes operations until the connection ends.
func (c *client) readLoop() {
	buf := make([]byte, startReadBuffer)
	short := 0
	for {
		n, err := c.conn.Read(buf)
		if n > 0 {
			c.lastActivity.Store(time.Now().UnixNano())
			c.stallTotal = 0
			ok := c.processInbound(buf[:n])
			c.flushPending()
			if !ok {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				c.setReason(reasonReadError)
			}
			return
		}
		// Adapt the buffer to the traffic.
		switch {
		case n == len(buf) && len(buf) < maxReadBuffer:
			buf = make([]byte, 2*len(buf))
			short = 0
		case n < len(buf)/4 && len(buf) > minReadBuffer:
			if short++; short >= shrinkAfter {
				buf = make([]byte, len(buf)/2)
				short = 0
			}
		default:
			short = 0
		}
	}
}

// processInbound parses and handles every operation in b. It returns false
// when the connection must close.
func (c *client) processInbound(b []byte) bool {
	for len(b) > 0 {
		op, n, err := c.parser.Next(b)
		b = b[n:]
		if err != nil {
			c.parseError(err)
			return false
		}
		if op == nil {
			break
		}
		if !c.processOp(op) {
			return false
		}
	}
	return true
}

// parseError reports a protocol error to the client and closes it.
func (c *client) parseError(err error) {
	reason := reasonParseError
	switch {
	case errors.Is(err, proto.ErrMaxPayload):
		reason = reasonMaxPayload
	case errors.Is(err, proto.ErrControlLineTooLong):
		reason = reasonMaxControlLine
	}
	c.srv.log.Debug("protocol error", "cid", c.cid, "err", err)
	c.sendErrAndClose(proto.ErrText(err), reason)
}

// processOp handles one operation; false closes the connection.
func (c *client) processOp(op *proto.Op) bool {
	if !c.connected.Load() && op.Kind != proto.OpConnect && c.srv.authHandler.Load().Required() {
		c.sendErrAndClose("Authorization Violation", reasonAuthViolation)
		return false
	}
	switch op.Kind {
	case proto.OpConnect:
		return c.processConnect(op.Arg)
	case proto.OpPub:
		c.processPub(op)
	case proto.OpSub:
		c.processSub(op.Subject, op.Queue, op.Sid)
	case proto.OpUnsub:
		c.processUnsub(op.Sid, op.Max)
	case proto.OpPing:
		c.processPing()
	case proto.OpPong:
		c.processPong()
	}
	return true
}

func (c *client) processPing() {
	if hook := c.srv.pingHook.Load(); hook != nil {
		(*hook)()
	}
	c.mu.Lock()
	c.out = append(c.out, proto.PongLine...)
	connected := c.connected.Load()
	sendInfo := !c.firstPong && connected && c.connectOpts.Protocol >= 1
	c.firstPong = c.firstPong || connected
	c.mu.Unlock()
	c.flushes[c] = struct{}{}
	if sendInfo {
		c.sendConnectInfo()
	}
}

func (c *client) processPong() {
	c.mu.Lock()
	c.pingsOut = 0
	if !c.rttStart.IsZero() {
		c.rtt = time.Since(c.rttStart)
		c.rttStart = time.Time{}
	}
	c.mu.Unlock()
}

// sendConnectInfo sends the INFO that follows the first PONG, telling the
// client which account it was bound to.
func (c *client) sendConnectInfo() {
	s := c.srv
	s.mu.Lock()
	info := s.baseInfoLocked()
	s.mu.Unlock()
	c.mu.Lock()
	info.ClientID = c.cid
	info.ClientIP = c.host
	info.ConnectInfo = true
	if c.acc != nil {
		info.RemoteAccount = c.acc.name
	}
	c.mu.Unlock()
	c.sendAsyncInfo(mustJSON(info))
}

// sendAsyncInfo queues an INFO line for protocol ≥ 1 clients.
func (c *client) sendAsyncInfo(infoJSON []byte) {
	c.mu.Lock()
	if c.closing || c.connectOpts.Protocol < 1 {
		c.mu.Unlock()
		return
	}
	c.out = append(c.out, "INFO "...)
	c.out = append(c.out, infoJSON...)
	c.out = append(c.out, "\r\n"...)
	c.cond.Signal()
	c.mu.Unlock()
}

// pingTick sends a keepalive PING, or closes a connection that left too
// many unanswered.
func (c *client) pingTick() {
	opts := c.srv.options()
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	if c.pingsOut+1 > opts.MaxPingsOut {
		c.mu.Unlock()
		c.srv.stats.staleConnections.Add(1)
		c.sendErrAndClose("Stale Connection", reasonStale)
		return
	}
	c.pingsOut++
	c.rttStart = time.Now()
	c.out = append(c.out, proto.PingLine...)
	c.cond.Signal()
	c.pingTimer.Reset(opts.PingInterval)
	c.mu.Unlock()
}

// maxInlineFanout is the most other connections one read batch writes to
// itself (see flushPending). On a 2-core machine, 1 publisher → 4
// subscribers (nats bench, 16 B) took half the server CPU and ran about
// 1.3× faster with the batch's four writes inline than with four writers
// woken per batch (each wake is a futex call and a context switch on
// both sides, about what a write of one batch costs).
const maxInlineFanout = 4

// flushPending flushes every connection this read batch wrote to, once
// per batch, not per message. When the batch wrote to a few other
// connections (a subscriber, a reply, a small fan-out: up to
// maxInlineFanout), it writes the pending bytes itself where nothing else
// is writing them (flushInlineLocked), as that costs less than waking a
// writer on another thread; each such write is one non-blocking write,
// so a slow consumer never holds the loop up. A larger fan-out wakes the
// writers, which write in parallel while this loop goes on reading: on the
// read loop the writes would add up, and it is the one serial stage.
func (c *client) flushPending() {
	// Counters first, so that a client answered by this flush (a PONG)
	// sees them in /varz and /connz.
	if b := c.batch; b != (batchStats{}) {
		c.stats.inMsgs.Add(b.inMsgs)
		c.stats.inBytes.Add(b.inBytes)
		st := &c.srv.stats
		st.inMsgs.Add(b.inMsgs)
		st.inBytes.Add(b.inBytes)
		st.outMsgs.Add(b.outMsgs)
		st.outBytes.Add(b.outBytes)
		c.batch = batchStats{}
	}
	others := len(c.flushes)
	if _, self := c.flushes[c]; self {
		others--
	}
	inline := others <= maxInlineFanout
	for t := range c.flushes {
		t.mu.Lock()
		if inline {
			t.flushInlineLocked()
		} else {
			t.cond.Signal()
		}
		t.mu.Unlock()
		delete(c.flushes, t)
	}
	c.lastFlush = nil
	// The memo lives for one read batch: a publisher that goes quiet
	// pins no subscriber that has gone since.
	c.memo.Forget()
}

// writeLoop writes pending output until the connection closes.
func (c *client) writeLoop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		// An inline writer in progress (writing) wakes this loop when it
		// leaves bytes behind or sees the connection closing.
		for (!c.closing && (len(c.out) == 0 || c.writing)) || (c.closing && c.flushAndClose && c.writing) {
			c.cond.Wait()
		}
		if c.closing && (!c.flushAndClose || len(c.out) == 0) {
			_ = c.conn.Close()
			return
		}
		if err := c.writeDirect(); err != nil {
			if errors.Is(err, errWriteTimeout) {
				c.srv.stats.slowConsumers.Add(1)
				c.markClosingLocked(reasonSlowWriteDeadline, false)
			} else {
				c.markClosingLocked(reasonWriteError, false)
			}
		}
	}
}

var errWriteTimeout = errors.New("server: write deadline exceeded")

// writeDirect writes everything pending. It is called with c.mu held and
// releases it during the write so producers can keep appending.
func (c *client) writeDirect() error {
	buf := c.out
	c.out = c.spare[:0]
	c.spare = nil
	c.inFlight = len(buf)
	c.writing = true
	c.wakePending = false
	conn := c.conn
	deadline := c.writeDeadline
	c.mu.Unlock()
	start := time.Now()
	_ = conn.SetWriteDeadline(start.Add(deadline))
	_, err := conn.Write(buf)
	c.mu.Lock()
	c.inFlight = 0
	c.writing = false
	c.noteWriteLocked(start)
	if c.stall != nil && int64(len(c.out)) < c.stallAt {
		close(c.stall)
		c.stall = nil
	}
	// Keep the buffer for reuse while it is small or well used; a large
	// one that carried little goes, so an idle connection shrinks.
	if cap(buf) <= maxSpareOutbound || (cap(buf) <= maxKeptOutbound && len(buf) >= cap(buf)/4) {
		c.spare = buf[:0]
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return errWriteTimeout
	}
	return err
}

// sendErr queues -ERR 'text' without closing.
func (c *client) sendErr(text string) {
	c.mu.Lock()
	if !c.closing {
		c.out = proto.AppendErr(c.out, text)
	}
	c.mu.Unlock()
	c.flushes[c] = struct{}{}
}

// sendErrAndClose queues -ERR 'text', then closes once it is written.
func (c *client) sendErrAndClose(text string, reason closeReason) {
	c.mu.Lock()
	if !c.closing {
		c.out = proto.AppendErr(c.out, text)
	}
	c.markClosingLocked(reason, true)
	c.mu.Unlock()
	c.teardown()
}

// closeConnection closes the connection without flushing pending output.
func (c *client) closeConnection(reason closeReason) {
	c.mu.Lock()
	c.markClosingLocked(reason, false)
	c.mu.Unlock()
	c.teardown()
}

// markClosingLocked records the first close reason (one setReason left
// stands) and wakes writeLoop.
func (c *client) markClosingLocked(reason closeReason, flush bool) {
	if c.closing {
		return
	}
	c.closing = true
	c.flushAndClose = flush
	if c.reason == reasonUnknown {
		c.reason = reason
	}
	c.stop = time.Now()
	c.cond.Signal()
	if c.stall != nil {
		close(c.stall)
		c.stall = nil
	}
	if !flush {
		// Unblock a writeLoop stuck in a write and the readLoop.
		_ = c.conn.Close()
	}
}

// setReason records why the connection ends, if nothing did yet.
func (c *client) setReason(r closeReason) {
	c.mu.Lock()
	if !c.closing && c.reason == 0 {
		c.reason = r
	}
	c.mu.Unlock()
}

// teardown removes c's subscriptions and stops its timers. It is
// idempotent.
func (c *client) teardown() {
	c.mu.Lock()
	subs := c.subs
	c.subs = map[string]*subscription{}
	acc := c.acc
	if c.pingTimer != nil {
		c.pingTimer.Stop()
	}
	if c.authTimer != nil {
		c.authTimer.Stop()
	}
	if c.flushAndClose {
		// Bound the time spent flushing an -ERR to a peer that does not
		// read.
		_ = c.conn.SetDeadline(time.Now().Add(time.Second))
	}
	c.mu.Unlock()
	if acc == nil || len(subs) == 0 {
		return
	}
	acc.removeSubs(slices.Collect(maps.Values(subs)))
}
