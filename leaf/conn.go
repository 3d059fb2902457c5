package leaf

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/leafbox/leafbox/core/proto"
)

// readBufferSize is the size of a connection's read buffer.
const readBufferSize = 32 << 10

// retainOutbound is the largest outbound buffer the writer keeps between
// writes; bigger ones (after a burst) are released.
const retainOutbound = 1 << 20

// closeFlushTimeout bounds the write of the last lines (an -ERR) of a
// closing connection, so a peer that stopped reading does not hold it
// for a whole WriteDeadline.
const closeFlushTimeout = time.Second

// Texts of the -ERR lines either side sends, as nats-server words them
// (client.go, parser.go).
const (
	errTextStaleConnection = "Stale Connection"
	errTextUnknownOp       = "Unknown Protocol Operation"
)

// connSettings are the limits and policies of one connection, the same
// for both sides of the protocol.
type connSettings struct {
	pingInterval  time.Duration
	maxPingsOut   int
	writeDeadline time.Duration
	maxPending    int
	// autoCompression: the configured mode is s2_auto, so every PONG
	// picks the level for the measured RTT with rttThresholds.
	autoCompression bool
	rttThresholds   []time.Duration
	// slowConsumers counts connections closed as slow consumers (of a
	// Link or a Listener).
	slowConsumers *atomic.Uint64
	// wire, when set, counts the bytes on the connection's socket.
	wire *wireCounters
	// peer names the other side in errors: "hub" or "leafnode".
	peer string
}

// newConnSettings builds the settings from a validated configuration of
// either side; compression is the configured mode.
func newConnSettings(pingInterval time.Duration, maxPingsOut int, writeDeadline time.Duration, maxPending int,
	compression string, rttThresholds []time.Duration, slowConsumers *atomic.Uint64, peer string) connSettings {
	return connSettings{
		pingInterval:    pingInterval,
		maxPingsOut:     maxPingsOut,
		writeDeadline:   writeDeadline,
		maxPending:      maxPending,
		autoCompression: compression == CompressionS2Auto,
		rttThresholds:   rttThresholds,
		slowConsumers:   slowConsumers,
		peer:            peer,
	}
}

// connection is what both sides of a leafnode connection share (a Link's
// session toward a hub, a Listener's peer toward a leaf): reading
// operations, the outbound queue with its pending limit, the writer that
// coalesces whatever is queued into one write, keepalive PINGs with the
// stale-connection rule, RTT measurement and, for s2_auto, the level it
// selects. The behaviour is decided once, as nats-server decides it for
// every connection kind (client.go processPingTimer, markConnAsClosed,
// handleWriteTimeout; parser.go):
//
//   - MaxPingsOut unanswered PINGs: -ERR 'Stale Connection', then close;
//   - a protocol error from the other side: -ERR 'Unknown Protocol
//     Operation', then close;
//   - more than MaxPending bytes queued, or a write that misses
//     WriteDeadline: closed without -ERR as a slow consumer, counted;
//   - a PING is answered with PONG; each PONG ends the oldest PING and
//     measures the RTT.
//
// The owning goroutine (the side's run) reads through next until the
// connection ends; the writer goroutine (writeLoop) is the only writer
// once the handshake is done. Producers append to out under mu.
type connection struct {
	set connSettings
	raw net.Conn // the socket; closing it ends the connection at once

	// Owned by the reading goroutine.
	conn    net.Conn  // the socket, or the TLS connection over it
	rd      io.Reader // conn, or an S2 reader over it
	parser  *proto.Parser
	buf     []byte // read buffer
	rest    []byte // read but not yet parsed
	started time.Time

	// Set by the handshake, read-only afterwards.
	compression string      // negotiated mode
	headers     bool        // the other side takes HMSG
	comp        *compressor // nil without compression; writer-owned after the handshake

	level atomic.Pointer[string] // s2_auto: the level the writer should use

	// Statistics.
	inMsgs, inBytes   atomic.Int64
	outMsgs, outBytes atomic.Int64
	rtt               atomic.Int64
	connectedAt       time.Time // set under mu at registration

	// onRTT, when set before the connection runs, is called after each
	// new RTT measurement, so that a status waiter sees it (Link.Wait).
	onRTT func()

	mu       sync.Mutex
	out      []byte // queued for the writer
	inFlight int    // bytes the writer is writing now
	pings    []pingWait
	draining bool  // write what is queued, then end with endErr
	endErr   error // why the connection ends
	ended    bool

	wake       chan struct{} // buffered(1): the writer has work
	done       chan struct{} // closed when the connection ends
	writerDone chan struct{}
}

// pingWait is a PING waiting for its PONG.
type pingWait struct {
	sent time.Time
	done chan error // nil for a keepalive PING
}

func newConnection(conn net.Conn, set connSettings, started time.Time) *connection {
	if set.wire != nil {
		conn = countedConn{Conn: conn, wire: set.wire}
	}
	return &connection{
		set:        set,
		raw:        conn,
		conn:       conn,
		rd:         conn,
		parser:     proto.NewParser(proto.LeafOps, proto.Limits{MaxControlLine: proto.LeafControlLineFactor * proto.DefaultMaxControlLine, MaxPayload: -1}),
		buf:        make([]byte, readBufferSize),
		started:    started,
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		writerDone: make(chan struct{}),
	}
}

// next returns the next operation, reading as needed. The operation's
// slices are valid until the next call.
func (c *connection) next() (*proto.Op, error) {
	for {
		if len(c.rest) > 0 {
			op, n, err := c.parser.Next(c.rest)
			c.rest = c.rest[n:]
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
			}
			if op != nil {
				return op, nil
			}
			continue
		}
		n, err := c.rd.Read(c.buf)
		if n > 0 {
			c.rest = c.buf[:n]
			continue
		}
		if err != nil {
			return nil, err
		}
	}
}

// serve runs a registered connection: it starts the writer, calls
// register, then hands every operation to handle until reading fails or
// handle returns an error. A protocol error is answered with -ERR 'Unknown
// Protocol Operation' before the connection closes. serve returns once
// the writer has stopped, with the error that ended reading.
func (c *connection) serve(register func(), handle func(*proto.Op) error) error {
	go c.writeLoop()
	register()
	var readErr error
	for readErr == nil {
		var op *proto.Op
		if op, readErr = c.next(); readErr == nil {
			readErr = handle(op)
		}
	}
	if errors.Is(readErr, ErrProtocol) {
		// Tell the other side before closing; the writer ends once it
		// is sent.
		c.finish(proto.AppendErr(nil, errTextUnknownOp), readErr)
		<-c.writerDone
	}
	c.end(readErr)
	<-c.writerDone
	return readErr
}

// handleKeepalive answers PING and matches PONG; it reports whether op was
// one of them.
func (c *connection) handleKeepalive(op *proto.Op) bool {
	switch op.Kind {
	case proto.OpPing:
		c.enqueue([]byte(proto.PongLine))
	case proto.OpPong:
		c.pong()
	default:
		return false
	}
	return true
}

// enqueue appends raw protocol bytes for the writer.
func (c *connection) enqueue(b []byte) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.out = append(c.out, b...)
	c.mu.Unlock()
	c.kick()
}

// kick wakes the writer.
func (c *connection) kick() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// queueInterest queues the LS+/LS- for key at count, unless the
// connection has ended, and wakes the writer.
func (c *connection) queueInterest(key interestKey, count int32) {
	c.mu.Lock()
	c.queueInterestLocked(key, count)
	c.mu.Unlock()
	c.kick()
}

// queueInterestLocked is queueInterest without the wake-up; mu is held.
func (c *connection) queueInterestLocked(key interestKey, count int32) {
	if !c.ended {
		c.out = appendInterest(c.out, key, count)
	}
}

// announceLocked queues, for a connection that registers, LS+ for every
// entry of interest that allow admits and for our loop-detection subject
// lds. mu is held, and so is whatever orders interest changes with the
// list (each change is then either in it or sent after it). The caller
// then kicks the writer and pings to measure the RTT.
func (c *connection) announceLocked(interest *localInterest, allow func(string) bool, lds string) {
	c.out, _ = interest.appendAll(c.out, allow)
	c.out = proto.AppendLeafSub(c.out, []byte(lds), nil, 0)
	c.connectedAt = time.Now()
}

// checkPendingLocked ends the connection as a slow consumer when more
// than MaxPending bytes wait, and reports whether it goes on. mu is held.
func (c *connection) checkPendingLocked() bool {
	if len(c.out)+c.inFlight <= c.set.maxPending {
		return true
	}
	c.set.slowConsumers.Add(1)
	c.endLocked(ErrSlowConsumer)
	return false
}

// send appends one LMSG (HMSG with headers, when the other side takes
// them) to the outbound buffer and wakes the writer. It reports false
// when the connection has ended or stopped reading (slow consumer). The
// slices are only copied.
func (c *connection) send(subject, reply []byte, queues [][]byte, hdr, data []byte) bool {
	hdrLen := -1
	if len(hdr) > 0 && c.headers {
		hdrLen = len(hdr)
	} else {
		hdr = nil
	}
	size := len(hdr) + len(data)

	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return false
	}
	c.out = proto.AppendLeafMsg(c.out, subject, reply, queues, hdrLen, size)
	c.out = append(c.out, hdr...)
	c.out = append(c.out, data...)
	c.out = append(c.out, '\r', '\n')
	ok := c.checkPendingLocked()
	c.mu.Unlock()
	if !ok {
		return false
	}
	c.outMsgs.Add(1)
	c.outBytes.Add(int64(size))
	c.kick()
	return true
}

// sendLocal sends local message m, routed by route, to the other side as
// an LMSG naming queues. For a JetStream delivery the stored subject rides
// after '@' in the reply (see jsDeliveryReply).
func (c *connection) sendLocal(route []byte, m Msg, queues [][]byte) {
	var replyBuf [256]byte
	reply := jsDeliveryReply(replyBuf[:0], route, m.Subject, m.Reply)
	c.send(route, reply, queues, m.Header, m.Data)
}

// queueName returns a read-only view of a queue group name, for
// AppendLeafMsg, which only copies it.
func queueName(name string) []byte {
	return unsafe.Slice(unsafe.StringData(name), len(name))
}

// received counts an LMSG from the other side and splits it for local
// delivery: the header block and body, and the subject local subscribers
// see with the reply they get. For a JetStream push delivery the LMSG
// subject routes to the deliver subject and the stream subject rides
// after '@' in the ack reply; it is shown and stripped from the reply.
func (c *connection) received(op *proto.Op) (shown, reply, hdr, data []byte) {
	c.inMsgs.Add(1)
	c.inBytes.Add(int64(len(op.Payload)))
	shown, reply = op.Subject, op.Reply
	if i := jsAckDeliverIndex(reply); i >= 0 && i < len(reply)-1 {
		shown, reply = reply[i+1:], reply[:i]
	}
	return shown, reply, op.Header(), op.Body()
}

// ping sends a PING; done, when not nil, receives nil at the PONG or an
// error if the connection ends first. A keepalive PING (done nil) fails
// with ErrStaleConnection when MaxPingsOut are unanswered.
func (c *connection) ping(done chan error) error {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return ErrNotConnected
	}
	if done == nil && len(c.pings) >= c.set.maxPingsOut {
		c.mu.Unlock()
		return ErrStaleConnection
	}
	c.pings = append(c.pings, pingWait{sent: time.Now(), done: done})
	c.out = append(c.out, proto.PingLine...)
	c.mu.Unlock()
	c.kick()
	return nil
}

// pong matches a PONG with the oldest outstanding PING, measures the RTT
// and, for s2_auto, picks the compression level for it.
func (c *connection) pong() {
	c.mu.Lock()
	if len(c.pings) == 0 {
		c.mu.Unlock()
		return
	}
	p := c.pings[0]
	c.pings = c.pings[1:]
	c.mu.Unlock()
	rtt := time.Since(p.sent)
	c.rtt.Store(int64(rtt))
	if c.comp != nil && c.set.autoCompression {
		level := autoLevel(rtt, c.set.rttThresholds)
		c.level.Store(&level)
	}
	if c.onRTT != nil {
		c.onRTT()
	}
	if p.done != nil {
		p.done <- nil
	}
}

// finish queues last (an -ERR, or nil) and ends the connection with err
// once everything queued is written.
func (c *connection) finish(last []byte, err error) {
	c.mu.Lock()
	if !c.ended && !c.draining {
		c.out = append(c.out, last...)
		c.draining = true
		c.endErr = err
	}
	c.mu.Unlock()
	c.kick()
}

// end ends the connection with err (the first error wins): the socket is
// closed, which stops the reader, and the writer returns.
func (c *connection) end(err error) {
	c.mu.Lock()
	c.endLocked(err)
	c.mu.Unlock()
}

func (c *connection) endLocked(err error) {
	if c.ended {
		return
	}
	c.ended = true
	if c.endErr == nil {
		c.endErr = err
	}
	for _, p := range c.pings {
		if p.done != nil {
			p.done <- ErrNotConnected
		}
	}
	c.pings = nil
	close(c.done)
	// The socket, not the TLS connection: its Close would wait for a
	// blocked write to send close_notify.
	_ = c.raw.Close()
}

// reason returns why the connection ended, preferring the recorded cause
// over the read error it provoked.
func (c *connection) reason(readErr error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.endErr != nil {
		return c.endErr
	}
	if errors.Is(readErr, io.EOF) {
		return fmt.Errorf("leaf: %s closed the connection: %w", c.set.peer, readErr)
	}
	return readErr
}

// A compressed connection's writer waits coalesceWait before it writes
// less than coalesceBytes, so that what producers queue meanwhile goes in
// the same write. Each write is one S2 block, compressed on its own: a
// block of many messages finds their repeated subjects, headers and
// reply prefixes, one of a single message does not. On a link slow
// enough to compress (s2_auto picks none below 10 ms of RTT) the wait is
// small beside the round trip.
const (
	coalesceWait  = time.Millisecond
	coalesceBytes = 32 << 10
)

// coalesces reports whether the writer waits to coalesce: the link
// compresses, at a level that is not s2_uncompressed. Only the writer
// calls it.
func (c *connection) coalesces() bool {
	if c.comp == nil {
		return false
	}
	level := c.comp.level
	if l := c.level.Load(); l != nil {
		level = *l
	}
	return level != CompressionS2Uncompressed
}

// queued returns how many bytes wait for the writer.
func (c *connection) queued() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.out)
}

// writeLoop is the connection's only writer once the handshake is done.
// It writes whatever is queued in one call (coalescing everything
// producers appended meanwhile) and sends keepalive PINGs.
func (c *connection) writeLoop() {
	defer close(c.writerDone)
	ticker := time.NewTicker(c.set.pingInterval)
	defer ticker.Stop()
	var buf []byte
	var gather *time.Timer // compressed connections: the coalescing wait (see coalesceWait)
	for {
		select {
		case <-c.done:
			return
		case <-ticker.C:
			if err := c.ping(nil); errors.Is(err, ErrStaleConnection) {
				c.finish(proto.AppendErr(nil, errTextStaleConnection), err)
			} else if err != nil {
				c.end(err)
				return
			}
		case <-c.wake:
		}
		if c.coalesces() && c.queued() < coalesceBytes {
			if gather == nil {
				gather = time.NewTimer(coalesceWait)
			} else {
				gather.Reset(coalesceWait)
			}
			select {
			case <-c.done:
				return
			case <-gather.C:
			}
		}
		for {
			c.mu.Lock()
			if c.ended {
				c.mu.Unlock()
				return
			}
			if len(c.out) == 0 {
				draining := c.draining
				if draining {
					c.endLocked(c.endErr)
				}
				c.mu.Unlock()
				if draining {
					return
				}
				break
			}
			buf, c.out = c.out, buf[:0]
			c.inFlight = len(buf)
			deadline := c.set.writeDeadline
			if c.draining {
				deadline = min(deadline, closeFlushTimeout)
			}
			c.mu.Unlock()
			err := c.writeWithin(buf, deadline)
			c.mu.Lock()
			c.inFlight = 0
			c.mu.Unlock()
			if err != nil {
				c.writeFailed(err)
				return
			}
			if cap(buf) > retainOutbound {
				buf = nil
			}
		}
	}
}

// writeFailed ends the connection after a failed write. A write that
// missed its deadline is a slow consumer, counted as one (unless the
// connection had already ended, which fails the write too).
func (c *connection) writeFailed(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && !c.draining {
		c.set.slowConsumers.Add(1)
		c.endLocked(fmt.Errorf("%w: write deadline exceeded", ErrSlowConsumer))
		return
	}
	c.endLocked(fmt.Errorf("leaf: write: %w", err))
}

// writeNow writes b synchronously within the write deadline, through the
// compressor once compression is on. Only the handshake uses it, before
// the writer goroutine starts.
func (c *connection) writeNow(b []byte) error {
	return c.writeWithin(b, c.set.writeDeadline)
}

// writeWithin writes one batch within d, compressed when the connection
// compresses.
func (c *connection) writeWithin(b []byte, d time.Duration) error {
	if err := c.conn.SetWriteDeadline(time.Now().Add(d)); err != nil {
		return err
	}
	if c.comp == nil {
		_, err := c.conn.Write(b)
		return err
	}
	if level := c.level.Load(); level != nil {
		c.comp.setLevel(*level)
	}
	return c.comp.write(b)
}

// compressionLevel returns the mode to report: with s2_auto, the level
// the last RTT selected.
func (c *connection) compressionLevel() string {
	if c.comp != nil {
		if level := c.level.Load(); level != nil {
			return *level
		}
	}
	return c.compression
}

// discardNil returns log, or a logger that discards when log is nil.
func discardNil(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
