package mqtt

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/server"
)

// Defaults of Config.
const (
	DefaultMaxPacketSize  = 1 << 20
	DefaultMaxInflight    = 64
	DefaultMaxQueue       = 10000
	DefaultMaxPending     = 8 << 20
	DefaultConnectTimeout = 10 * time.Second
	DefaultWriteDeadline  = 10 * time.Second
	DefaultTopicAliasMax  = 64
	DefaultParkAfter      = 50 * time.Millisecond
)

// ErrClosed is returned by Serve after Close.
var ErrClosed = errors.New("mqtt: listener closed")

// Broker is the router the listener publishes into and subscribes to;
// *server.Server satisfies it.
type Broker interface {
	InProcess(account string) *server.Conn
	InProcessCombined(account string, fn server.CombinedHandler) *server.Conn
}

// Authenticator checks a client's credentials; *auth.Authenticator
// satisfies it.
type Authenticator interface {
	Authenticate(c auth.Credentials, nonce string) (*auth.Identity, error)
}

// DurablePublisher publishes a QoS 1 or 2 message so that it returns
// only once every local store that must keep the message (a capturing
// stream, an uplink's outbox) has it; an error means it was not stored
// and the client is not acknowledged.
type DurablePublisher interface {
	PublishDurable(account, subj, reply string, hdr, data []byte) error
}

// Config configures a Server.
type Config struct {
	// Broker is the router. Required.
	Broker Broker
	// Auth checks credentials; nil lets every client in to the global
	// account with no permission limits.
	Auth Authenticator
	// State keeps sessions and retained messages; nil is a new MemState.
	State State
	// Durable, when set, publishes QoS 1 and 2 messages.
	Durable DurablePublisher
	// TLS, when set, makes the listener speak TLS.
	TLS *tls.Config
	// MaxConnections bounds concurrent connections (0: unlimited).
	MaxConnections int
	// MaxPacketSize bounds a packet from a client (default 1MiB); it is
	// announced to MQTT 5 clients.
	MaxPacketSize int
	// MaxInflight bounds the QoS 1 and 2 messages sent to a client and
	// not yet acknowledged, and is announced as the receive maximum for
	// the client's QoS 2 messages (default 64).
	MaxInflight int
	// MaxQueue bounds a session's waiting QoS 1 and 2 messages (default
	// 10000); messages beyond it are dropped and counted.
	MaxQueue int
	// MaxPending bounds the bytes waiting to be written to a connection
	// (default 8MiB); a client that falls further behind is cut off as a
	// slow consumer.
	MaxPending int
	// MinKeepAlive and MaxKeepAlive bound the keep alive a client may ask
	// for (0: no bound). An MQTT 5 client outside them is told the
	// server's keep alive; a 3.1.1 client asking for more than the
	// maximum, or for none, is held to the maximum.
	MinKeepAlive, MaxKeepAlive time.Duration
	// ConnectTimeout bounds the wait for CONNECT (default 10s).
	ConnectTimeout time.Duration
	// WriteDeadline bounds one write to a client (default 10s).
	WriteDeadline time.Duration
	// ParkAfter is how long a connection's reader waits for a byte before
	// it parks the connection (default 50ms; negative: never): a parked
	// connection holds no goroutine and no buffer, an epoll set waits for
	// its bytes and a sweeper enforces its keep alive. Parking needs Linux
	// (elsewhere each connection keeps its reader); a plain TCP connection
	// also lets its Go net.Conn go while parked, a TLS one keeps it (and
	// its TLS state) but not its reader.
	ParkAfter time.Duration
	// Logger receives the listener's logs; nil discards them.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	set := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	set(&c.MaxPacketSize, DefaultMaxPacketSize)
	set(&c.MaxInflight, DefaultMaxInflight)
	set(&c.MaxQueue, DefaultMaxQueue)
	set(&c.MaxPending, DefaultMaxPending)
	if c.ConnectTimeout <= 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.WriteDeadline <= 0 {
		c.WriteDeadline = DefaultWriteDeadline
	}
	if c.ParkAfter == 0 {
		c.ParkAfter = DefaultParkAfter
	}
	if c.State == nil {
		c.State = NewMemState()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxInflight > 65535 {
		c.MaxInflight = 65535
	}
}

// Stats are the listener's counters.
type Stats struct {
	Connections    int64 // currently open
	TotalConns     int64 // accepted since start
	Sessions       int64 // sessions held (connected or not)
	InMsgs         int64
	OutMsgs        int64
	InBytes        int64
	OutBytes       int64
	ProtocolErrors int64 // connections closed for a protocol violation
	AuthFailures   int64
	SlowConsumers  int64
	Dropped        int64 // messages dropped: queue full, too large, expired
	Retained       int64 // retained messages set or cleared
	Parked         int64 // connections parked now: no goroutine, no buffer
	Parks          int64 // times a connection was parked since start
}

type counters struct {
	conns, totalConns, inMsgs, outMsgs, inBytes, outBytes atomic.Int64
	protoErrs, authFails, slow, dropped, retained         atomic.Int64
	parks, parked                                         atomic.Int64
}

// Server is an MQTT 3.1.1 and 5 listener in front of the broker: each
// client connection is a session whose subscriptions are broker
// subscriptions on the mapped subjects and whose publishes are broker
// publishes (core/subject's topic mapping). Build it with New, then Serve a
// net.Listener; Close stops it.
type Server struct {
	cfg  Config
	auth atomic.Pointer[authHolder]
	log  *slog.Logger
	st   counters

	// poller waits for the bytes of parked connections; nil when
	// connections do not park.
	poller *poller

	mu       sync.Mutex
	ln       net.Listener
	sessions map[string]*session
	conns    []*conn // open connections; each knows its index (conn.idx)
	nextID   uint64
	closed   bool
	wg       sync.WaitGroup
}

type authHolder struct{ a Authenticator }

// New returns a Server for cfg, restoring the sessions State holds (their
// subscriptions are made again, so messages for them are queued from now
// on).
func New(cfg Config) (*Server, error) {
	if cfg.Broker == nil {
		return nil, errors.New("mqtt: no broker")
	}
	cfg.setDefaults()
	s := &Server{cfg: cfg, log: cfg.Logger, sessions: map[string]*session{}}
	s.auth.Store(&authHolder{cfg.Auth})
	stored, err := cfg.State.LoadSessions()
	if err != nil {
		return nil, fmt.Errorf("mqtt: loading sessions: %w", err)
	}
	for _, ss := range stored {
		if err := s.restore(ss); err != nil {
			s.log.Warn("mqtt session not restored", "client_id", ss.ClientID, "err", err)
		}
	}
	return s, nil
}

// SetAuth replaces the authenticator (on reload); connected clients keep
// their identity.
func (s *Server) SetAuth(a Authenticator) { s.auth.Store(&authHolder{a}) }

// Serve accepts connections on ln until Close; it returns ErrClosed then,
// or the accept error.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	if s.cfg.TLS != nil {
		ln = tls.NewListener(ln, s.cfg.TLS)
	}
	s.ln = ln
	if s.poller == nil && s.cfg.ParkAfter > 0 {
		p, err := newPoller(s)
		if err != nil {
			s.log.Info("mqtt connections do not park", "err", err)
		}
		s.poller = p
	}
	s.mu.Unlock()
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				return ErrClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				delay = min(max(2*delay, 5*time.Millisecond), time.Second)
				time.Sleep(delay)
				continue
			}
			return err
		}
		delay = 0
		s.accept(nc)
	}
}

// Listen opens a TCP listener for Serve on addr. Its connections start
// without TCP keep alive (net.Listen's default sets three socket options
// on each accepted connection, a quarter of the cost of accepting it):
// MQTT's own keep alive, 1.5 times the client's, finds dead clients, and
// a client that asks for none gets TCP's after its CONNECT.
func Listen(addr string) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1}
	return lc.Listen(context.Background(), "tcp", addr)
}

// Addr returns the listener's address, or nil before Serve.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return nil
	}
	return s.ln.Addr()
}

func (s *Server) accept(nc net.Conn) {
	s.mu.Lock()
	if s.closed || (s.cfg.MaxConnections > 0 && len(s.conns) >= s.cfg.MaxConnections) {
		s.mu.Unlock()
		s.log.Debug("mqtt connection refused", "remote", nc.RemoteAddr().String(), "reason", "max connections")
		// Refused before CONNECT: the version is unknown, so no CONNACK.
		_ = nc.Close()
		return
	}
	s.nextID++
	c := newConn(s, nc, s.nextID)
	c.idx = int32(len(s.conns))
	s.conns = append(s.conns, c)
	s.wg.Add(1) // done when the connection finishes
	s.mu.Unlock()
	s.st.conns.Add(1)
	s.st.totalConns.Add(1)
	go c.readLoop()
}

func (s *Server) removeConn(c *conn) {
	s.mu.Lock()
	if i := int(c.idx); i >= 0 && i < len(s.conns) && s.conns[i] == c {
		last := len(s.conns) - 1
		s.conns[i] = s.conns[last]
		s.conns[i].idx = int32(i)
		s.conns[last] = nil
		s.conns = s.conns[:last]
		c.idx = -1
		s.st.conns.Add(-1)
		if cap(s.conns) > 64 && len(s.conns) < cap(s.conns)/4 {
			s.conns = append([]*conn(nil), s.conns...) // give back what a past peak grew
		}
	}
	s.mu.Unlock()
}

// Close stops accepting, disconnects every client (MQTT 5 clients with
// reason 0x8B, server shutting down), keeps persistent sessions in State,
// and waits for the connections' goroutines until ctx ends.
func (s *Server) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	ln, p := s.ln, s.poller
	conns := append([]*conn(nil), s.conns...)
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, c := range conns {
		c.closeWith(codeServerShuttingDown, "server shutting down", false)
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if p != nil {
		p.close()
	}
	s.mu.Lock()
	sessions := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		ss.stop()
	}
	return nil
}

// Stats returns the listener's counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	n := int64(len(s.sessions))
	s.mu.Unlock()
	return Stats{
		Connections: s.st.conns.Load(), TotalConns: s.st.totalConns.Load(), Sessions: n,
		InMsgs: s.st.inMsgs.Load(), OutMsgs: s.st.outMsgs.Load(), InBytes: s.st.inBytes.Load(), OutBytes: s.st.outBytes.Load(),
		ProtocolErrors: s.st.protoErrs.Load(), AuthFailures: s.st.authFails.Load(), SlowConsumers: s.st.slow.Load(),
		Dropped: s.st.dropped.Load(), Retained: s.st.retained.Load(),
		Parked: s.st.parked.Load(), Parks: s.st.parks.Load(),
	}
}

// ConnInfo describes one MQTT connection for monitoring.
type ConnInfo struct {
	ID                uint64
	ClientID          string
	Version           byte
	Remote            net.Addr
	Start             time.Time
	LastActivity      time.Time
	User, Account     string
	Subs              int
	InMsgs, OutMsgs   int64
	InBytes, OutBytes int64
	Pending           int
	TLSVersion        uint16
	Parked            bool // no reader: waiting in the poller for bytes
	Attached          bool // holds a Go net.Conn (a parked one lets it go once its writer is done)
}

// Conns returns the open connections that have completed CONNECT.
func (s *Server) Conns() []ConnInfo {
	s.mu.Lock()
	conns := append([]*conn(nil), s.conns...)
	s.mu.Unlock()
	out := make([]ConnInfo, 0, len(conns))
	for _, c := range conns {
		if info, ok := c.info(); ok {
			out = append(out, info)
		}
	}
	return out
}
