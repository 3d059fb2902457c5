package leaf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/proto"
)

// readBufferSize is the size of a session's read buffer.
const readBufferSize = 32 << 10

// retainOutbound is the largest outbound buffer the writer keeps between
// writes; bigger ones (after a burst) are released.
const retainOutbound = 1 << 20

// session is one connection to a hub, from the dial to its end. The
// session goroutine (Link.run) does the handshake and then reads; the
// writer goroutine is the only code that writes once the handshake is
// done. Local publishers append to the outbound buffer under mu.
type session struct {
	link   *Link
	cfg    *Config
	remote remote

	raw net.Conn // the socket; closing it ends the session at once

	// Owned by the session goroutine.
	conn    net.Conn  // the socket, or the TLS connection over it
	rd      io.Reader // conn, or an S2 reader over it
	parser  *proto.Parser
	buf     []byte // read buffer
	rest    []byte // read but not yet parsed
	started time.Time
	hubSubs map[string]Subscription // local subscriptions per hub subject
	delay   time.Duration           // reconnect delay asked for by the hub

	// Set by the handshake, read-only afterwards.
	hubInfo       proto.Info
	remoteAccount string
	compression   string // negotiated mode
	headers       bool
	comp          *compressor // nil without compression; writer-owned after the handshake
	local         LocalConn
	hub           *hubInterest // changed by the session goroutine only

	perms atomic.Pointer[perms]
	level atomic.Pointer[string] // s2_auto: the level the writer should use

	// Statistics.
	inMsgs, inBytes   atomic.Int64
	outMsgs, outBytes atomic.Int64
	rtt               atomic.Int64
	numSubs           atomic.Int64
	connectedAt       time.Time

	mu       sync.Mutex
	out      []byte // queued for the writer
	inFlight int    // bytes the writer is writing now
	pings    []pingWait
	draining bool  // write what is queued, then end with endErr
	endErr   error // why the session ends
	ended    bool

	wake       chan struct{} // buffered(1): the writer has work
	done       chan struct{} // closed when the session ends
	writerDone chan struct{}
}

// pingWait is a PING waiting for its PONG.
type pingWait struct {
	sent time.Time
	done chan error // nil for a keepalive PING
}

func newSession(l *Link, r remote, conn net.Conn, started time.Time) *session {
	return &session{
		link:       l,
		cfg:        &l.cfg,
		remote:     r,
		raw:        conn,
		conn:       conn,
		rd:         conn,
		parser:     proto.NewParser(proto.LeafOps, proto.Limits{MaxControlLine: proto.LeafControlLineFactor * proto.DefaultMaxControlLine, MaxPayload: -1}),
		buf:        make([]byte, readBufferSize),
		started:    started,
		hubSubs:    make(map[string]Subscription),
		hub:        newHubInterest(),
		wake:       make(chan struct{}, 1),
		done:       make(chan struct{}),
		writerDone: make(chan struct{}),
	}
}

// next returns the next operation, reading as needed. The operation's
// slices are valid until the next call.
func (s *session) next() (*proto.Op, error) {
	for {
		if len(s.rest) > 0 {
			op, n, err := s.parser.Next(s.rest)
			s.rest = s.rest[n:]
			if err != nil {
				return nil, fmt.Errorf("%w: %v", ErrProtocol, err)
			}
			if op != nil {
				return op, nil
			}
			continue
		}
		n, err := s.rd.Read(s.buf)
		if n > 0 {
			s.rest = s.buf[:n]
			continue
		}
		if err != nil {
			return nil, err
		}
	}
}

// readLoop processes the hub's operations until the connection ends.
func (s *session) readLoop() error {
	for {
		op, err := s.next()
		if err != nil {
			return err
		}
		if err := s.handle(op); err != nil {
			return err
		}
	}
}

// handle processes one operation from the hub.
func (s *session) handle(op *proto.Op) error {
	switch op.Kind {
	case proto.OpLeafMsg:
		s.deliver(op)
	case proto.OpLeafSub:
		return s.hubSubscribe(op)
	case proto.OpLeafUnsub:
		s.hubUnsubscribe(op)
	case proto.OpPing:
		s.enqueue([]byte(proto.PongLine))
	case proto.OpPong:
		s.pong()
	case proto.OpInfo:
		var info proto.Info
		if err := json.Unmarshal(op.Arg, &info); err != nil {
			return fmt.Errorf("%w: INFO: %v", ErrProtocol, err)
		}
		s.link.learnURLs(info.LeafNodeURLs, s.remote)
		if info.Import != nil || info.Export != nil {
			s.perms.Store(newPerms(s.cfg, info.Import, info.Export))
		}
	case proto.OpErr:
		text := string(op.Arg)
		s.link.log.Warn("leaf: hub error", "url", s.remote.redacted(), "error", text)
		s.link.setError(&HubError{Text: text})
		s.link.notePubViolation(text)
		if d := errorDelay(text); d > 0 {
			s.delay = d
		}
		if strings.Contains(text, loopText) {
			return ErrLoopDetected
		}
	case proto.OpOK:
	default:
		return fmt.Errorf("%w: unexpected %v", ErrProtocol, op.Kind)
	}
	return nil
}

// hubSubscribe handles LS+: the hub's interest, which local messages are
// forwarded to. The first entry on a subject subscribes locally.
func (s *session) hubSubscribe(op *proto.Op) error {
	subj := string(op.Subject)
	if subj == s.link.lds {
		// Our own loop-detection subject came back: tell the hub, close,
		// and wait before reconnecting, as nats-server does.
		s.delay = loopDelay
		text := fmt.Sprintf("Loop detected for leafnode account=%q. Delaying attempt to reconnect for %v", s.link.accountName(), loopDelay)
		s.link.log.Error("leaf: "+text, "url", s.remote.redacted())
		s.finish(proto.AppendErr(nil, text), ErrLoopDetected)
		return nil
	}
	if !s.perms.Load().canPublishPattern(subj) {
		return nil // we could never send there; nats-server's spoke ignores it
	}
	queue := string(op.Queue)
	first, err := s.hub.add(subj, queue, op.Weight)
	if err != nil {
		s.link.log.Warn("leaf: ignoring invalid hub interest", "subject", subj, "queue", queue)
		return nil
	}
	s.numSubs.Store(int64(s.hub.len()))
	if !first || strings.HasPrefix(subj, ldsPrefix) {
		return nil
	}
	sub, err := s.local.Subscribe(subj, func(m Msg) { s.forward(subj, m) })
	if err != nil {
		s.link.log.Warn("leaf: cannot subscribe locally for hub interest", "subject", subj, "error", err)
		return nil
	}
	s.hubSubs[subj] = sub
	return nil
}

// hubUnsubscribe handles LS-. The last entry on a subject unsubscribes
// locally.
func (s *session) hubUnsubscribe(op *proto.Op) {
	subj := string(op.Subject)
	last := s.hub.remove(subj, string(op.Queue))
	s.numSubs.Store(int64(s.hub.len()))
	if !last {
		return
	}
	if sub, ok := s.hubSubs[subj]; ok {
		delete(s.hubSubs, subj)
		sub.Unsubscribe()
	}
}

// enqueue appends raw protocol bytes for the writer.
func (s *session) enqueue(b []byte) {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return
	}
	s.out = append(s.out, b...)
	s.mu.Unlock()
	s.kick()
}

// kick wakes the writer.
func (s *session) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// checkPendingLocked ends the session as a slow consumer when more than
// MaxPending bytes wait, and reports whether it goes on. mu is held.
func (s *session) checkPendingLocked() bool {
	if len(s.out)+s.inFlight <= s.cfg.MaxPending {
		return true
	}
	s.link.slowConsumers.Add(1)
	s.endLocked(ErrSlowConsumer)
	return false
}

// ping sends a PING; done, when not nil, receives nil at the PONG or an
// error if the session ends first.
func (s *session) ping(done chan error) error {
	s.mu.Lock()
	if s.ended {
		s.mu.Unlock()
		return ErrNotConnected
	}
	if done == nil && len(s.pings) >= s.cfg.MaxPingsOut {
		s.mu.Unlock()
		return ErrStaleConnection
	}
	s.pings = append(s.pings, pingWait{sent: time.Now(), done: done})
	s.out = append(s.out, proto.PingLine...)
	s.mu.Unlock()
	s.kick()
	return nil
}

// pong matches a PONG with the oldest outstanding PING, measures the RTT
// and, for s2_auto, picks the compression level for it.
func (s *session) pong() {
	s.mu.Lock()
	if len(s.pings) == 0 {
		s.mu.Unlock()
		return
	}
	p := s.pings[0]
	s.pings = s.pings[1:]
	s.mu.Unlock()
	rtt := time.Since(p.sent)
	s.rtt.Store(int64(rtt))
	if p.done != nil {
		p.done <- nil
	}
	if s.comp != nil && s.cfg.Compression == CompressionS2Auto {
		level := autoLevel(rtt, s.cfg.RTTThresholds)
		s.level.Store(&level)
	}
}

// finish queues last (an -ERR, or nil) and ends the session with err once
// everything queued is written.
func (s *session) finish(last []byte, err error) {
	s.mu.Lock()
	if !s.ended && !s.draining {
		s.out = append(s.out, last...)
		s.draining = true
		s.endErr = err
	}
	s.mu.Unlock()
	s.kick()
}

// end ends the session with err (the first error wins): the connection is
// closed, which stops the reader, and the writer returns.
func (s *session) end(err error) {
	s.mu.Lock()
	s.endLocked(err)
	s.mu.Unlock()
}

func (s *session) endLocked(err error) {
	if s.ended {
		return
	}
	s.ended = true
	if s.endErr == nil {
		s.endErr = err
	}
	for _, p := range s.pings {
		if p.done != nil {
			p.done <- ErrNotConnected
		}
	}
	s.pings = nil
	close(s.done)
	// The socket, not the TLS connection: its Close would wait for a
	// blocked write to send close_notify.
	_ = s.raw.Close()
}

// reason returns why the session ended, preferring the recorded cause over
// the read error it provoked.
func (s *session) reason(readErr error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endErr != nil {
		return s.endErr
	}
	if errors.Is(readErr, io.EOF) {
		return fmt.Errorf("leaf: hub closed the connection: %w", readErr)
	}
	return readErr
}

// writeLoop is the session's only writer once the handshake is done. It
// writes whatever is queued in one call (coalescing everything producers
// appended meanwhile) and sends keepalive PINGs.
func (s *session) writeLoop() {
	defer close(s.writerDone)
	ticker := time.NewTicker(s.cfg.PingInterval)
	defer ticker.Stop()
	var buf []byte
	for {
		select {
		case <-s.done:
			return
		case <-ticker.C:
			if err := s.ping(nil); err != nil {
				s.end(err)
				return
			}
		case <-s.wake:
		}
		for {
			s.mu.Lock()
			if s.ended {
				s.mu.Unlock()
				return
			}
			if len(s.out) == 0 {
				draining := s.draining
				if draining {
					s.endLocked(s.endErr)
				}
				s.mu.Unlock()
				if draining {
					return
				}
				break
			}
			buf, s.out = s.out, buf[:0]
			s.inFlight = len(buf)
			s.mu.Unlock()
			err := s.write(buf)
			s.mu.Lock()
			s.inFlight = 0
			s.mu.Unlock()
			if err != nil {
				s.end(fmt.Errorf("leaf: write: %w", err))
				return
			}
			if cap(buf) > retainOutbound {
				buf = nil
			}
		}
	}
}

// write writes one batch within the write deadline, compressed when the
// link compresses.
func (s *session) write(b []byte) error {
	if err := s.conn.SetWriteDeadline(time.Now().Add(s.cfg.WriteDeadline)); err != nil {
		return err
	}
	if s.comp == nil {
		_, err := s.conn.Write(b)
		return err
	}
	if level := s.level.Load(); level != nil {
		s.comp.setLevel(*level)
	}
	return s.comp.write(b)
}

// compressionLevel returns the mode to report: the level in use.
func (s *session) compressionLevel() string {
	if s.comp != nil {
		if level := s.level.Load(); level != nil {
			return *level
		}
	}
	return s.compression
}
