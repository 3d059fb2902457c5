package leaf

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/proto"
)

// DefaultAuthTimeout bounds an accepted connection's handshake: from the
// INFO we send to the leaf's CONNECT.
const DefaultAuthTimeout = 2 * time.Second

// AcceptConfig configures a Listener: the accepting ("hub") side of the
// leafnode protocol, which other leafbox gateways and nats-server leafs
// (leafnodes.remotes) attach to. Zero optional fields select defaults;
// NewListener fills them in.
type AcceptConfig struct {
	// Addr is the "host:port" to listen on; port 0 picks a free port.
	Addr string

	// Auth, when set, is what a leaf must present in CONNECT: a token,
	// users with passwords, or NKey users (which sign the nonce every INFO
	// carries). Each user is bound to its account. nil accepts every leaf
	// without credentials.
	Auth *auth.Config
	// Account is the local account of leafs that authenticate without a
	// user (a token, or no authentication); "" is the global account.
	Account string

	// TLS, when set, makes every leaf upgrade to TLS after our INFO. Set
	// ClientAuth to tls.RequireAndVerifyClientCert to verify leaf
	// certificates (INFO then says tls_verify).
	TLS *tls.Config

	// Compression is the S2 compression mode offered to leafs, as in
	// Config.Compression; "" is s2_auto. A leaf that does not negotiate
	// (sends CONNECT right away) gets none.
	Compression string

	// ServerID and ServerName identify this server in INFO. ServerID also
	// seeds the loop-detection subject, so give it the server's own id
	// (the one the server's solicited links use). "" generates one.
	ServerID   string
	ServerName string
	// Version is announced in INFO; "" is DefaultVersion.
	Version string
	// MaxPayload is announced in INFO; 0 is 1 MiB.
	MaxPayload int64
	// JetStream and Domain are announced in INFO.
	JetStream bool
	Domain    string

	// AuthTimeout bounds the handshake (TLS included) up to CONNECT.
	AuthTimeout time.Duration
	// PingInterval and MaxPingsOut: a leaf that leaves MaxPingsOut PINGs
	// unanswered is closed as stale.
	PingInterval time.Duration
	MaxPingsOut  int
	// WriteDeadline bounds one write; MaxPending the bytes queued for one
	// leaf before it is closed as a slow consumer.
	WriteDeadline time.Duration
	MaxPending    int
}

// validate checks c and fills in defaults.
func (c *AcceptConfig) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return bad("listen address %q: %v", c.Addr, err)
	}
	mode, err := NormalizeCompression(c.Compression)
	if err != nil {
		return bad("%v", err)
	}
	c.Compression = mode
	if c.ServerID == "" {
		c.ServerID = newID()
	}
	if c.ServerName == "" {
		c.ServerName = c.ServerID
	}
	if c.Version == "" {
		c.Version = DefaultVersion
	}
	if c.MaxPayload <= 0 {
		c.MaxPayload = 1 << 20
	}
	setDefault(&c.AuthTimeout, DefaultAuthTimeout)
	setDefault(&c.PingInterval, DefaultPingInterval)
	if c.MaxPingsOut <= 0 {
		c.MaxPingsOut = DefaultMaxPingsOut
	}
	setDefault(&c.WriteDeadline, DefaultWriteDeadline)
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	return nil
}

// AcceptLocal is the local broker as a Listener sees it. cmd/internal/app
// adapts *server.Server to it.
type AcceptLocal interface {
	// Connect returns a new no-echo in-process connection bound to
	// account, one per accepted leaf, closed when the leaf goes. Every
	// local message that its subscriptions take reaches deliver once, on
	// the publisher's goroutine; deliver must not block.
	Connect(account string, deliver func(Delivery)) (AcceptConn, error)

	// WatchInterest is Local.WatchInterest with the origin of each change:
	// From is the LocalConn (returned by Connect) whose subscription
	// changed, or nil for any other subscription. A leaf is never told of
	// its own interest.
	WatchInterest(account string, fn func(AcceptInterest)) (existing []AcceptInterest, cancel func())
}

// AcceptInterest is one local subscription change with its origin.
type AcceptInterest struct {
	Interest
	From AcceptConn
}

// AcceptConn is an attached leaf's in-process connection, safe for
// concurrent use. Its subscriptions stand for the leaf's interest: a
// queue subscription is a member of the local queue group like any other
// (so a solicited link announces it to its hub as queue interest), except
// that the broker prefers local members over it, as nats-server prefers
// local queue subscribers over a leafnode.
type AcceptConn interface {
	// Subscribe adds one subscription on subject (wildcards allowed), a
	// member of queue group queue when queue is not "". Messages it takes
	// reach the deliver function given to Connect.
	Subscribe(subject, queue string) (Subscription, error)

	QueueFilterPublisher

	// Close removes every subscription of the connection.
	Close()
}

// Delivery is one local message for an attached leaf: the message, whether
// a plain subscription took it, and the queue groups in which one of the
// leaf's members was chosen. Msg's slices and Queues are borrowed: valid
// only while the deliver function runs.
type Delivery struct {
	Msg
	Plain  bool
	Queues []string
}

// Listener accepts leafnode connections: the hub side of the protocol that
// Link speaks as the spoke, as nats-server v2.15.2 serves its leafnodes
// port (server/leafnode.go).
//
// Handshake: the Listener writes INFO (auth_required, info_on_connect, a
// nonce, its compression mode), upgrades to TLS when configured, and
// waits AuthTimeout for CONNECT. A leaf that wants compression first sends
// its own plain INFO; when both sides compress, everything after that line
// is S2 both ways, starting with our second INFO. CONNECT is checked (no
// lang, no gateway), authenticated against Auth (-ERR 'Authorization
// Violation' on failure) and binds the leaf to an account. The Listener
// answers with the connect_info INFO (remote_account), then LS+ for the
// account's interest and its loop-detection subject, then a PING.
//
// Interest: every local subscription of the account is announced, except
// the leaf's own and the JetStream deny set ($JS.API.>, $KV.>, $OBJ.>),
// with queue weights as on a Link. The interest of the account's other
// attached leafs is relayed as they announced it (queue groups and
// weights included), and that of solicited links' hubs as plain
// interest, so messages flow between leafs through this server. The
// leaf's LS+ subscribe locally through its AcceptConn: plain interest as
// one subscription, a queue group of weight w as min(w, 128) members of
// that local queue group, so a solicited link of this server announces
// the group, with that weight, to its hub. A literal LS+ in the deny set,
// or an LMSG there, ends the connection with -ERR 'Permissions Violation
// ...'. An LS+ carrying our own loop-detection subject ends it with -ERR
// 'Loop detected ...'.
//
// Messages: the broker chooses where a local message goes; the leaf gets
// it once (one LMSG), naming the queue groups in which the leaf's member
// was chosen. Local queue members are preferred over a leaf's; among
// leafs, members are picked at random. A JetStream delivery carries the
// stored subject after '@' in the reply, as on a Link. LMSG/HMSG from the
// leaf are published locally with nats-server's queue rule (only the
// named groups receive them); an '@' in a JetStream ack reply is stripped
// and shows the stored subject to the local subscriber.
//
// Goroutines and locks: an accept goroutine, and per connection a reader
// and a writer. Lock order: broker locks (interest watch) → peer.mu;
// Listener.mu is never held while taking a peer's lock.
//
// Listener is safe for concurrent use; build one with NewListener.
type Listener struct {
	cfg   AcceptConfig
	local AcceptLocal
	log   *slog.Logger
	authn *auth.Authenticator // nil: no authentication

	// registered is a copy-on-write snapshot of the registered leafs, for
	// queue-group decisions on publisher goroutines.
	registered atomic.Pointer[[]*peer]
	// slowConsumers counts leafs closed for falling MaxPending behind.
	slowConsumers atomic.Uint64

	// relayMu guards relay: each registered leaf's interest (key →
	// weight, 1 for plain), which the other leafs of its account are told
	// of as it is, queue groups included. (Their local subscriptions are
	// plain, so the broker's interest events would tell them less.)
	relayMu sync.Mutex
	relay   map[*peer]map[interestKey]int32

	mu      sync.Mutex
	ln      net.Listener
	peers   map[*peer]struct{} // every open connection, registered or not
	nextID  uint64
	closed  bool
	changed chan struct{} // closed and replaced when a leaf comes or goes
	wg      sync.WaitGroup
}

// NewListener validates cfg and returns a Listener that accepts once
// started. log may be nil.
func NewListener(cfg AcceptConfig, local AcceptLocal, log *slog.Logger) (*Listener, error) {
	if local == nil {
		return nil, fmt.Errorf("%w: no local broker", ErrInvalidConfig)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	l := &Listener{cfg: cfg, local: local, log: log, peers: map[*peer]struct{}{}, changed: make(chan struct{}),
		relay: map[*peer]map[interestKey]int32{}}
	if cfg.Auth != nil {
		a, err := auth.New(*cfg.Auth)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
		}
		l.authn = a
	}
	l.registered.Store(&[]*peer{})
	return l, nil
}

// Start binds the listen address and accepts leafs in the background.
func (l *Listener) Start() error {
	ln, err := net.Listen("tcp", l.cfg.Addr)
	if err != nil {
		return fmt.Errorf("leaf: listen: %w", err)
	}
	l.mu.Lock()
	if l.closed || l.ln != nil {
		l.mu.Unlock()
		_ = ln.Close()
		return errors.New("leaf: listener closed or already started")
	}
	l.ln = ln
	l.wg.Add(1)
	l.mu.Unlock()
	l.log.Info("leaf: listening for leafnode connections", "addr", ln.Addr().String())
	go l.acceptLoop(ln)
	return nil
}

// Addr returns the bound address, or nil before Start.
func (l *Listener) Addr() net.Addr {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ln == nil {
		return nil
	}
	return l.ln.Addr()
}

// Close stops accepting, closes every leaf connection (their interest is
// removed locally) and waits for their goroutines. It is idempotent.
func (l *Listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		l.wg.Wait()
		return nil
	}
	l.closed = true
	ln := l.ln
	peers := make([]*peer, 0, len(l.peers))
	for p := range l.peers {
		peers = append(peers, p)
	}
	l.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	for _, p := range peers {
		p.end(ErrClosed)
	}
	l.wg.Wait()
	return nil
}

func (l *Listener) acceptLoop(ln net.Listener) {
	defer l.wg.Done()
	delay := 5 * time.Millisecond
	for {
		conn, err := ln.Accept()
		if err != nil {
			l.mu.Lock()
			closed := l.closed
			l.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of file descriptors and the like: back off, as
			// net/http does.
			l.log.Warn("leaf: accept", "error", err)
			time.Sleep(delay)
			delay = min(2*delay, time.Second)
			continue
		}
		delay = 5 * time.Millisecond
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			_ = conn.Close()
			return
		}
		l.nextID++
		p := newPeer(l, l.nextID, conn)
		l.peers[p] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go func() {
			defer l.wg.Done()
			p.run()
		}()
	}
}

// info returns the INFO we send on a new connection (leafnode.go
// startLeafNodeAcceptLoop): auth is always "required" (a leaf must send
// CONNECT), and info_on_connect promises the INFO with connect_info.
func (l *Listener) info(id uint64, nonce string) proto.Info {
	info := proto.Info{
		ServerID:      l.cfg.ServerID,
		ServerName:    l.cfg.ServerName,
		Version:       l.cfg.Version,
		Proto:         1,
		Go:            runtime.Version(),
		Headers:       true,
		AuthRequired:  true,
		TLSRequired:   l.cfg.TLS != nil,
		TLSVerify:     l.cfg.TLS != nil && l.cfg.TLS.ClientAuth == tls.RequireAndVerifyClientCert,
		MaxPayload:    l.cfg.MaxPayload,
		JetStream:     l.cfg.JetStream,
		Domain:        l.cfg.Domain,
		ClientID:      id,
		Nonce:         nonce,
		InfoOnConnect: true,
		Compression:   l.cfg.Compression,
	}
	if a, ok := l.ln.Addr().(*net.TCPAddr); ok {
		info.Host, info.Port = a.IP.String(), a.Port
	}
	return info
}

// register makes p a registered leaf. A registered leaf with the same
// server name, account and remote account is replaced (it reconnected
// before its old connection was noticed dead), as nats-server replaces it.
func (l *Listener) register(p *peer) (old *peer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := *l.registered.Load()
	next := make([]*peer, 0, len(cur)+1)
	for _, o := range cur {
		if p.name != "" && o.name == p.name && o.account == p.account && o.remoteAccount == p.remoteAccount {
			old = o
			continue
		}
		next = append(next, o)
	}
	next = append(next, p)
	l.registered.Store(&next)
	l.notifyLocked()
	return old
}

// forget removes p after its connection ended and its local interest was
// removed.
func (l *Listener) forget(p *peer) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.peers, p)
	cur := *l.registered.Load()
	if i := slices.Index(cur, p); i >= 0 {
		next := slices.Delete(slices.Clone(cur), i, i+1)
		l.registered.Store(&next)
		l.notifyLocked()
	}
}

func (l *Listener) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// AcceptedStatus is a snapshot of one registered leaf, for /leafz.
type AcceptedStatus struct {
	// ID is the connection id (INFO client_id).
	ID uint64
	// Name and ServerID identify the leaf's server (CONNECT name,
	// server_id).
	Name     string
	ServerID string
	// RemoteAddr is the leaf's address (ip:port).
	RemoteAddr string
	// Account is the local account the leaf is bound to; RemoteAccount the
	// leaf's own account (CONNECT remote_account).
	Account       string
	RemoteAccount string
	// RTT is the last measured PING round trip.
	RTT time.Duration
	// InMsgs and InBytes count messages received from the leaf; OutMsgs
	// and OutBytes those sent to it.
	InMsgs, InBytes   int64
	OutMsgs, OutBytes int64
	// Subjects are the leaf's interest (LS+), sorted.
	Subjects []string
	// Compression is the negotiated mode.
	Compression string
	// ConnectedSince is when the leaf registered.
	ConnectedSince time.Time
}

// SlowConsumers returns how many leafs were closed because more than
// MaxPending bytes waited for them.
func (l *Listener) SlowConsumers() uint64 { return l.slowConsumers.Load() }

// Leafs returns the registered leafs in registration order.
func (l *Listener) Leafs() []AcceptedStatus {
	cur := *l.registered.Load()
	out := make([]AcceptedStatus, 0, len(cur))
	for _, p := range cur {
		out = append(out, p.status())
	}
	return out
}

// Wait blocks until cond holds for Leafs (checked whenever a leaf comes or
// goes and whenever a leaf's interest changes), or ctx ends.
func (l *Listener) Wait(ctx context.Context, cond func([]AcceptedStatus) bool) error {
	for {
		l.mu.Lock()
		ch := l.changed
		l.mu.Unlock()
		if cond(l.Leafs()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Flush sends a PING to every registered leaf and waits for their PONGs.
// When it returns nil, every leaf has processed what was queued for it
// before the call (interest and messages), and everything the leafs sent
// before their PONG has been processed locally.
func (l *Listener) Flush(ctx context.Context) error {
	peers := *l.registered.Load()
	waits := make([]chan error, 0, len(peers))
	for _, p := range peers {
		done := make(chan error, 1)
		if err := p.ping(done); err != nil {
			return err
		}
		waits = append(waits, done)
	}
	for _, done := range waits {
		select {
		case err := <-done:
			if err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// joinRelay starts relaying interest for p and tells p of the interest of
// the account's other leafs.
func (l *Listener) joinRelay(p *peer) {
	l.relayMu.Lock()
	defer l.relayMu.Unlock()
	l.relay[p] = map[interestKey]int32{}
	for o, keys := range l.relay {
		if o != p && o.account == p.account {
			for k, w := range keys {
				p.applyRelayed(k, w)
			}
		}
	}
}

// leaveRelay withdraws p's interest from the account's other leafs.
func (l *Listener) leaveRelay(p *peer) {
	l.relayMu.Lock()
	defer l.relayMu.Unlock()
	keys, ok := l.relay[p]
	if !ok {
		return
	}
	delete(l.relay, p)
	for o := range l.relay {
		if o.account == p.account {
			for k, w := range keys {
				o.applyRelayed(k, -w)
			}
		}
	}
}

// relayInterest records that leaf p's interest in key now has weight w
// (1 for plain interest, the member count for a queue group, 0 when
// withdrawn) and tells the account's other leafs.
func (l *Listener) relayInterest(p *peer, key interestKey, w int32) {
	l.relayMu.Lock()
	defer l.relayMu.Unlock()
	keys, ok := l.relay[p]
	if !ok {
		return
	}
	old := keys[key]
	if w == old {
		return
	}
	if w > 0 {
		keys[key] = w
	} else {
		delete(keys, key)
	}
	for o := range l.relay {
		if o != p && o.account == p.account {
			o.applyRelayed(key, w-old)
		}
	}
}

// interestChanged wakes Wait callers after a leaf's LS+ or LS-.
func (l *Listener) interestChanged() {
	l.mu.Lock()
	l.notifyLocked()
	l.mu.Unlock()
}
