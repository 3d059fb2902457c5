package server

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/sublist"
)

// Version is the server version reported in INFO. Official clients gate
// features on it (KV needs ≥ 2.6.2, the consumer create API ≥ 2.9.0), so it
// states the nats-server feature level leafbox speaks.
const Version = "2.11.0"

// ErrServerClosed is returned by Start after Shutdown.
var ErrServerClosed = errors.New("server: closed")

// maxClosedClients bounds the closed connections kept for /connz.
const maxClosedClients = 1000

// Server is a NATS-protocol broker serving client connections.
type Server struct {
	id    string
	start time.Time
	log   *slog.Logger

	mu          sync.Mutex
	opts        Options
	listener    net.Listener
	clients     map[uint64]*client
	accounts    map[string]*account
	closed      []closedConn // ring of recently closed connections
	closedNext  int
	lameDuck    bool
	shutdown    bool
	configTime  time.Time
	acceptDone  chan struct{}
	connsDone   sync.WaitGroup
	shutdownCh  chan struct{}
	infoJSON    []byte // INFO template without per-client fields
	authHandler atomic.Pointer[auth.Authenticator]
	pingHook    atomic.Pointer[func()]

	nextCID atomic.Uint64
	stats   serverStats

	// Rate limits of the WARN lines clients cause, one per kind.
	authWarns, permWarns *logLimiter
}

// serverStats are the server-wide counters, read by monitoring.
type serverStats struct {
	inMsgs, outMsgs, inBytes, outBytes atomic.Int64
	slowConsumers, staleConnections    atomic.Int64
	totalConnections, stalls           atomic.Int64
}

// New validates opts and builds a Server; Start begins serving.
func New(opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	authn, err := newAuthenticator(opts.Auth)
	if err != nil {
		return nil, err
	}
	s := &Server{
		id:         newServerID(),
		start:      time.Now(),
		opts:       opts,
		log:        opts.Logger,
		authWarns:  newLogLimiter(warnBurst, warnRefill),
		permWarns:  newLogLimiter(warnBurst, warnRefill),
		clients:    make(map[uint64]*client),
		accounts:   make(map[string]*account),
		configTime: time.Now(),
		shutdownCh: make(chan struct{}),
	}
	s.authHandler.Store(authn)
	for _, name := range authn.Accounts() {
		s.lookupAccount(name)
	}
	if s.opts.ServerName == "" {
		s.opts.ServerName = s.id
	}
	return s, nil
}

func newAuthenticator(cfg *auth.Config) (*auth.Authenticator, error) {
	if cfg == nil {
		cfg = &auth.Config{}
	}
	return auth.New(*cfg)
}

// newServerID returns a unique id shaped like nats-server's: 56 upper-case
// base32 characters starting with 'N'.
func newServerID() string {
	var b [35]byte
	_, _ = rand.Read(b[:])
	return "N" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])[:55]
}

// lookupAccount returns the named account, creating it when absent.
func (s *Server) lookupAccount(name string) *account {
	s.mu.Lock()
	defer s.mu.Unlock()
	acc := s.accounts[name]
	if acc == nil {
		acc = &account{name: name, sl: sublist.New[*subscription]()}
		s.accounts[name] = acc
	}
	return acc
}

// Start binds the client listener and serves connections in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shutdown {
		return ErrServerClosed
	}
	if s.listener != nil {
		return errors.New("server: already started")
	}
	port := s.opts.Port
	if port == RandomPort {
		port = 0
	}
	addr := net.JoinHostPort(s.opts.Host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", addr, err)
	}
	s.listener = ln
	s.infoJSON = s.buildInfoLocked()
	s.acceptDone = make(chan struct{})
	go s.acceptLoop(ln)
	s.log.Info("listening for client connections", "addr", ln.Addr().String(), "server_id", s.id, "server_name", s.opts.ServerName)
	return nil
}

// buildInfoLocked renders the INFO fields shared by every connection.
func (s *Server) buildInfoLocked() []byte {
	info := s.baseInfoLocked()
	b, _ := json.Marshal(info)
	return b
}

func (s *Server) baseInfoLocked() proto.Info {
	host, port := s.opts.Host, s.opts.Port
	if s.listener != nil {
		if a, ok := s.listener.Addr().(*net.TCPAddr); ok {
			port = a.Port
		}
	}
	authn := s.authHandler.Load()
	return proto.Info{
		ServerID:     s.id,
		ServerName:   s.opts.ServerName,
		Version:      Version,
		GitCommit:    s.opts.BuildCommit,
		Proto:        1,
		Go:           runtime.Version(),
		Host:         host,
		Port:         port,
		Headers:      !s.opts.NoHeaderSupport,
		MaxPayload:   int64(s.opts.MaxPayload),
		AuthRequired: authn.Required(),
		TLSRequired:  s.opts.TLS != nil,
		TLSVerify:    s.opts.TLSVerify,
		JetStream:    s.opts.JetStream,
		Domain:       s.opts.JetStreamDomain,
		APILevel:     s.opts.JetStreamAPILevel,
	}
}

func (s *Server) acceptLoop(ln net.Listener) {
	defer close(s.acceptDone)
	var delay time.Duration
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Temporary failures (too many open files) back off and retry.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			s.log.Warn("accept failed", "err", err, "retry_in", delay)
			select {
			case <-time.After(delay):
				continue
			case <-s.shutdownCh:
				return
			}
		}
		delay = 0
		s.connsDone.Add(1)
		go s.serveConn(conn)
	}
}

// Addr returns the client listener's address, or nil before Start.
func (s *Server) Addr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.listenerAddr()
}

// listenerAddr returns the listener's address; s.mu must be held.
func (s *Server) listenerAddr() net.Addr {
	if s.listener == nil {
		return nil
	}
	return s.listener.Addr()
}

// ClientURL returns the nats:// URL clients on this machine can dial.
func (s *Server) ClientURL() string {
	a, ok := s.Addr().(*net.TCPAddr)
	if !ok {
		return ""
	}
	host := a.IP.String()
	if a.IP.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "nats://" + net.JoinHostPort(host, strconv.Itoa(a.Port))
}

// ID returns the server's unique id, as sent in INFO server_id.
func (s *Server) ID() string { return s.id }

// Name returns the server name, as sent in INFO server_name.
func (s *Server) Name() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.ServerName
}

// NumClients returns the number of open client connections.
func (s *Server) NumClients() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// Shutdown stops accepting, closes every client and waits for the
// server's goroutines, or returns ctx's error when ctx ends first.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.shutdown {
		s.shutdown = true
		close(s.shutdownCh)
	}
	ln := s.listener
	clients := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
		<-s.acceptDone
	}
	for _, c := range clients {
		c.closeConnection(reasonServerShutdown)
	}
	done := make(chan struct{})
	go func() {
		s.connsDone.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// LameDuck stops accepting connections, tells clients with an INFO that
// carries ldm, then closes them gradually over LameDuckDuration after
// LameDuckGracePeriod, and finally shuts the server down. It returns when
// the server is shut down or ctx ends.
func (s *Server) LameDuck(ctx context.Context) error {
	s.mu.Lock()
	if s.lameDuck || s.shutdown {
		s.mu.Unlock()
		return nil
	}
	s.lameDuck = true
	ln := s.listener
	info := s.baseInfoLocked()
	grace, duration := s.opts.LameDuckGracePeriod, s.opts.LameDuckDuration
	clients := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	s.log.Info("entering lame duck mode", "clients", len(clients), "grace", grace, "duration", duration)
	if ln != nil {
		_ = ln.Close()
		<-s.acceptDone
	}
	info.LameDuckMode = true
	ldm, _ := json.Marshal(info)
	for _, c := range clients {
		c.sendAsyncInfo(ldm)
	}
	wait := func(d time.Duration) error {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-s.shutdownCh:
			return ErrServerClosed
		}
	}
	if err := wait(grace); err != nil {
		return s.finishLameDuck(ctx, err)
	}
	// Close the clients evenly over the duration, so they reconnect
	// elsewhere gradually rather than all at once.
	if n := len(clients); n > 0 {
		step := duration / time.Duration(n)
		for i, c := range clients {
			c.closeConnection(reasonServerShutdown)
			if i < n-1 && step > 0 {
				if err := wait(step); err != nil {
					return s.finishLameDuck(ctx, err)
				}
			}
		}
	}
	return s.finishLameDuck(ctx, nil)
}

func (s *Server) finishLameDuck(ctx context.Context, cause error) error {
	if errors.Is(cause, ErrServerClosed) {
		return nil
	}
	if cause != nil {
		return cause
	}
	return s.Shutdown(ctx)
}

// InLameDuckMode reports whether LameDuck has been called.
func (s *Server) InLameDuckMode() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lameDuck
}

// Reload applies opts to the running server without dropping clients:
// authentication, accounts, permissions, and the limits read when a
// connection starts (they apply to new connections). Clients whose
// credentials no longer authenticate are closed with an authorization
// violation; subscriptions the new permissions deny are removed. Options
// that need a restart (listen address, TLS) are rejected with an error.
func (s *Server) Reload(opts Options) error {
	if err := opts.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	old := s.opts
	s.mu.Unlock()
	if opts.ServerName == "" {
		opts.ServerName = old.ServerName
	}
	switch {
	case opts.Host != old.Host || (opts.Port != old.Port && opts.Port != RandomPort):
		return errors.New("server: reload cannot change the listen address; restart instead")
	case (opts.TLS == nil) != (old.TLS == nil) || opts.TLSHandshakeFirst != old.TLSHandshakeFirst:
		return errors.New("server: reload cannot turn TLS on or off; restart instead")
	}
	authn, err := newAuthenticator(opts.Auth)
	if err != nil {
		return err
	}
	for _, name := range authn.Accounts() {
		s.lookupAccount(name)
	}
	s.mu.Lock()
	opts.Port = old.Port
	opts.Logger = old.Logger
	opts.BuildVersion, opts.BuildCommit, opts.BuildDate = old.BuildVersion, old.BuildCommit, old.BuildDate // the binary's, fixed
	s.opts = opts
	s.authHandler.Store(authn)
	s.configTime = time.Now()
	s.infoJSON = s.buildInfoLocked()
	clients := make([]*client, 0, len(s.clients))
	for _, c := range s.clients {
		clients = append(clients, c)
	}
	s.mu.Unlock()
	for _, c := range clients {
		c.reauthorize(authn)
	}
	s.log.Info("configuration reloaded", "clients", len(clients))
	return nil
}

// options returns a copy of the current options.
func (s *Server) options() Options {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts
}

// OnPing sets f to run on a client's read goroutine before the PONG that
// answers the client's PING is queued; nil removes it. Everything the
// client published before the PING has been routed by then, so f can make
// it durable (the uplinks' outboxes sync their captures), and the client's
// next PONG means its messages are kept.
func (s *Server) OnPing(f func()) {
	if f == nil {
		s.pingHook.Store(nil)
		return
	}
	s.pingHook.Store(&f)
}
