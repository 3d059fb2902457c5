package leaf

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"fmt"
	"log/slog"
	mathrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/sublist"
)

// ldsPrefix starts every loop-detection subject.
const ldsPrefix = "$LDS."

// Link is a solicited leafnode connection from the local broker to a
// nats-server hub: it keeps one connection up (reconnecting with jittered
// exponential backoff and failover across the hub's URLs), announces the
// local account's interest to the hub, subscribes locally for the hub's
// interest, and carries messages both ways where there is interest.
//
// A Link is safe for concurrent use. Its zero value is not usable; build
// one with New.
type Link struct {
	cfg     Config
	local   Local
	log     *slog.Logger
	lds     string   // our loop-detection subject
	remotes []remote // configured URLs

	// localQueues holds the local account's queue subscriptions (not the
	// link's own), for the "prefer a local member" decision on the
	// publisher's goroutine; it is safe for concurrent use.
	localQueues   *sublist.Sublist[struct{}]
	slowConsumers atomic.Uint64
	wire          wireCounters // bytes on the sockets of every connection
	rand          func() float64

	mu          sync.Mutex
	interest    *localInterest
	watch       watchGate[Interest]
	cancelWatch func()
	sess        *session // the registered connection, or nil
	state       State
	stateSince  time.Time // when state was entered
	learned     []remote  // leafnode_urls announced by the hub
	next        int       // rotation index over remotes and learned
	connects    uint64
	lastErr     error
	lastErrAt   time.Time
	retryAt     time.Time // when the next connect attempt starts
	// pubViolations holds the subjects the hub refused with a publish
	// permissions violation -ERR, and when (see Publish).
	pubViolations map[string]time.Time
	changed       chan struct{} // closed and replaced on every state change
	started       bool
	closed        bool
	cancel        context.CancelFunc
	done          chan struct{} // closed when the run goroutine returns
}

// New validates cfg (filling in defaults), checks that its credentials can
// be read, and returns a Link that connects once started. log may be nil.
func New(cfg Config, local Local, log *slog.Logger) (*Link, error) {
	if local == nil {
		return nil, fmt.Errorf("%w: no local broker", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	l := &Link{
		cfg:         cfg,
		local:       local,
		log:         discardNil(log),
		localQueues: sublist.New[struct{}](),
		rand:        mathrand.Float64,
		interest:    newLocalInterest(),
		changed:     make(chan struct{}),
		done:        make(chan struct{}),
	}
	l.cfg.URLs = append([]string(nil), cfg.URLs...)
	for _, raw := range l.cfg.URLs {
		r, _ := parseRemoteURL(raw) // Validate checked them
		l.remotes = append(l.remotes, r)
	}
	id, err := loadIdentity(&l.cfg)
	if err != nil {
		return nil, err
	}
	id.wipe()
	l.lds = loopSubject(l.cfg.ServerID, l.accountName())
	return l, nil
}

// loopSubject derives the loop-detection subject of one local account of
// one server. Every link of that account computes the same subject, so a
// loop through two of its links (hub A … hub B) is detected too.
func loopSubject(serverID, account string) string {
	sum := sha256.Sum256([]byte(serverID + "\x00" + account))
	return ldsPrefix + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:14])
}

// newID returns a random server id.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "L" + base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
}

// accountName returns the bound local account's name.
func (l *Link) accountName() string {
	if l.cfg.Account == "" {
		return globalAccount
	}
	return l.cfg.Account
}

// Start begins watching the local account's interest and connecting to
// the hub; it returns at once. Cancelling ctx stops the link as Close
// does, except that Close also waits.
func (l *Link) Start(ctx context.Context) error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.started {
		l.mu.Unlock()
		return errors.New("leaf: link already started")
	}
	l.started = true
	ctx, l.cancel = context.WithCancel(ctx)
	l.setStateLocked(StateConnecting)
	l.mu.Unlock()

	existing, cancel := l.local.WatchInterest(l.cfg.Account, l.onInterest)
	l.mu.Lock()
	l.cancelWatch = cancel
	l.watch.open(existing, l.applyLocked)
	l.mu.Unlock()

	go l.run(ctx)
	return nil
}

// Close stops the link: the hub connection is closed, interest learned
// from the hub is removed locally, and the interest watch ends. It waits
// for the link's goroutines and is idempotent.
func (l *Link) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	started, cancel := l.started, l.cancel
	l.mu.Unlock()
	if started {
		cancel()
		<-l.done
		l.cancelWatch()
	}
	l.mu.Lock()
	l.setStateLocked(StateClosed)
	l.mu.Unlock()
	return nil
}

// Flush sends a PING to the hub and waits for its PONG. When it returns
// nil, everything the link queued before the call (interest and messages)
// has been processed by the hub, and everything the hub sent before its
// PONG has been processed locally.
func (l *Link) Flush(ctx context.Context) error {
	l.mu.Lock()
	s := l.sess
	l.mu.Unlock()
	if s == nil {
		return ErrNotConnected
	}
	done := make(chan error, 1)
	if err := s.ping(done); err != nil {
		return err
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// WaitConnected blocks until the link is registered with a hub, the link
// is closed (ErrClosed) or ctx ends.
func (l *Link) WaitConnected(ctx context.Context) error {
	return l.Wait(ctx, func(st Status) bool { return st.State == StateConnected })
}

// Wait blocks until cond holds for the link's status (checked at every
// state change, recorded error and RTT measurement), the link is closed (ErrClosed,
// unless cond holds for the closed status) or ctx ends (ctx.Err()).
func (l *Link) Wait(ctx context.Context, cond func(Status) bool) error {
	for {
		l.mu.Lock()
		ch := l.changed
		l.mu.Unlock()
		st := l.Status()
		if cond(st) {
			return nil
		}
		if st.State == StateClosed {
			return ErrClosed
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// linkSettings returns the settings of a connection of the link.
func (l *Link) linkSettings() connSettings {
	set := l.cfg.connSettings(&l.slowConsumers)
	set.wire = &l.wire
	return set
}

// Status returns a snapshot of the link.
func (l *Link) Status() Status {
	l.mu.Lock()
	st := Status{
		State:         l.state,
		Account:       l.accountName(),
		LocalInterest: l.interest.len(),
		Connects:      l.connects,
		SlowConsumers: l.slowConsumers.Load(),
		WireIn:        l.wire.in.Load(),
		WireOut:       l.wire.out.Load(),
		LastErrorAt:   l.lastErrAt,
		StateSince:    l.stateSince,
	}
	if l.state == StateConnecting {
		st.RetryAt = l.retryAt
	}
	if l.lastErr != nil {
		st.LastError = l.lastErr.Error()
	}
	s := l.sess
	l.mu.Unlock()
	if s == nil {
		return st
	}
	st.URL = s.remote.redacted()
	st.RemoteAddr = s.conn.RemoteAddr().String()
	st.ServerID = s.hubInfo.ServerID
	st.ServerName = s.hubInfo.ServerName
	st.RemoteAccount = s.remoteAccount
	st.RTT = time.Duration(s.rtt.Load())
	st.InMsgs, st.InBytes = s.inMsgs.Load(), s.inBytes.Load()
	st.OutMsgs, st.OutBytes = s.outMsgs.Load(), s.outBytes.Load()
	st.Subscriptions = int(s.numSubs.Load())
	st.Compression = s.compressionLevel()
	st.ConnectedSince = s.connectedAt
	return st
}

// onInterest receives the local account's subscription changes. It runs
// with the broker's locks held, so it only updates the table and queues
// the LS+/LS- line.
func (l *Link) onInterest(ev Interest) {
	if ev.Leaf {
		return // learned from a hub: never announced upward
	}
	l.mu.Lock()
	l.watch.offer(ev, l.applyLocked)
	l.mu.Unlock()
}

// applyLocked applies one change to the interest table and tells the hub
// when the table says so. l.mu is held.
func (l *Link) applyLocked(ev Interest) {
	if ev.Leaf {
		return
	}
	key, count, notify := l.interest.apply(ev, l.localQueues)
	if s := l.sess; notify && s != nil && s.perms.Load().canSubscribe(key.subject) {
		s.queueInterest(key, count)
	}
}

// run keeps a hub connection up until ctx ends.
func (l *Link) run(ctx context.Context) {
	defer close(l.done)
	failures := 0
	for {
		r := l.pickRemote()
		registered, delay, err := l.connect(ctx, r)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			l.setError(err)
		}
		if registered {
			failures = 0
		}
		wait := max(delay, backoff(failures, l.cfg.ReconnectMin, l.cfg.ReconnectMax, l.cfg.ReconnectJitter, l.rand))
		failures++
		l.log.Info("leaf: reconnecting", "url", r.redacted(), "in", wait, "error", err)
		l.mu.Lock()
		l.retryAt = time.Now().Add(wait)
		l.notifyLocked()
		l.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// pickRemote returns the next URL to try, rotating through the configured
// URLs and the ones the hub announced.
func (l *Link) pickRemote() remote {
	l.mu.Lock()
	defer l.mu.Unlock()
	all := len(l.remotes) + len(l.learned)
	i := l.next % all
	l.next++
	if i < len(l.remotes) {
		return l.remotes[i]
	}
	return l.learned[i-len(l.remotes)]
}

// learnURLs adds the hub's leafnode_urls to the reconnect targets, with
// the scheme, credentials and TLS name of the URL in use.
func (l *Link) learnURLs(urls []string, template remote) {
	if len(urls) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range urls {
		r, ok := learnedRemote(u, template)
		if !ok || l.knownLocked(r.address()) {
			continue
		}
		l.learned = append(l.learned, r)
	}
}

func (l *Link) knownLocked(addr string) bool {
	for _, r := range l.remotes {
		if r.address() == addr {
			return true
		}
	}
	for _, r := range l.learned {
		if r.address() == addr {
			return true
		}
	}
	return false
}

// connect runs one connection: dial, handshake, registration and the read
// loop until the connection ends. It reports whether the connection was
// registered, the reconnect delay the hub asked for, and why it ended.
func (l *Link) connect(ctx context.Context, r remote) (registered bool, delay time.Duration, err error) {
	started := time.Now()
	conn, err := l.dial(ctx, r)
	if err != nil {
		return false, 0, fmt.Errorf("leaf: dial %s: %w", r.redacted(), err)
	}
	s := newSession(l, r, conn, started)
	stop := context.AfterFunc(ctx, func() { s.end(ErrClosed) })
	defer stop()

	id, err := loadIdentity(&l.cfg)
	if err == nil {
		err = s.handshake(id)
		id.wipe()
	}
	if err == nil {
		s.local, err = l.local.Connect(l.cfg.Account)
	}
	if err != nil {
		s.end(err)
		err = s.reason(err)
		l.log.Warn("leaf: connect failed", "url", r.redacted(), "error", err)
		return false, s.delay, err
	}

	readErr := s.serve(func() { l.register(s) }, s.handle)
	s.local.Close()
	err = s.reason(readErr)
	l.unregister(s, err)
	return true, s.delay, err
}

// register makes s the link's connection: it queues LS+ for the whole
// local interest (filtered by the permissions) and our loop-detection
// subject, then a PING to measure the RTT. Holding l.mu while building the
// list orders it with interest changes: each is either in the list or
// sent after it.
func (l *Link) register(s *session) {
	l.mu.Lock()
	p := s.perms.Load()
	s.mu.Lock()
	s.announceLocked(l.interest, p.canSubscribe, l.lds)
	s.mu.Unlock()
	l.sess = s
	l.connects++
	l.setStateLocked(StateConnected)
	l.mu.Unlock()
	s.kick()
	_ = s.ping(nil)
	l.log.Info("leaf: connected", "url", s.remote.redacted(), "hub", s.hubInfo.ServerName,
		"account", l.accountName(), "remote_account", s.remoteAccount, "compression", s.compression)
}

// unregister forgets s after its connection ended with err.
func (l *Link) unregister(s *session, err error) {
	l.mu.Lock()
	if l.sess == s {
		l.sess = nil
		if l.state == StateConnected {
			l.setStateLocked(StateConnecting)
		}
	}
	if err != nil && !errors.Is(err, ErrClosed) {
		l.lastErr, l.lastErrAt = err, time.Now()
		l.notifyLocked()
	}
	l.mu.Unlock()
	l.log.Warn("leaf: disconnected", "url", s.remote.redacted(), "error", err)
}

// setError records the last connection error.
func (l *Link) setError(err error) {
	l.mu.Lock()
	l.lastErr, l.lastErrAt = err, time.Now()
	l.notifyLocked()
	l.mu.Unlock()
}

// setStateLocked changes the state and wakes waiters. l.mu is held.
func (l *Link) setStateLocked(st State) {
	if l.state == st || l.state == StateClosed {
		return
	}
	l.state, l.stateSince = st, time.Now()
	l.notifyLocked()
}

// notifyLocked wakes everything waiting for a change of the link's
// status. l.mu is held.
func (l *Link) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}
