package downlink

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/leaf/internal/runstate"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Defaults applied to zero Config fields.
const (
	// DefaultDomain is the hub's JetStream domain when Config.Domain is
	// empty.
	DefaultDomain = "hub"
	// DefaultMaxAckPending is how many messages the hub may have
	// outstanding toward the gateway: 1 keeps the stream's order through
	// link losses.
	DefaultMaxAckPending = 1
	// DefaultBatch is how many messages one pull request asks for.
	DefaultBatch = 100
	// DefaultAckWait is how long the hub waits for an ack before it sends
	// a message again.
	DefaultAckWait = 30 * time.Second
	// DefaultExpires is how long a pull request waits on the hub.
	DefaultExpires = 30 * time.Second
	// DefaultRequestTimeout bounds a JetStream API request to the hub.
	DefaultRequestTimeout = 5 * time.Second
	// DefaultRetryMin and DefaultRetryMax bound the backoff between
	// sessions and the nak delay after local failures.
	DefaultRetryMin = 100 * time.Millisecond
	DefaultRetryMax = 10 * time.Second
	// DrainTimeout bounds the wait, when the downlink stops, for the hub
	// to confirm the acks sent.
	DrainTimeout = 2 * time.Second
	// maxHeartbeat caps the idle heartbeat asked for in a pull request.
	maxHeartbeat = 5 * time.Second
	// maxUnconfirmed bounds the acks remembered while the hub has not
	// confirmed them.
	maxUnconfirmed = 4096
)

// Errors the downlink records in Status.LastError.
var (
	// ErrNoHeartbeat means the hub sent nothing for two heartbeat
	// intervals of the pull request: the link or the hub went away.
	ErrNoHeartbeat = errors.New("downlink: no heartbeat from the hub")
	// ErrRequestTimeout means a JetStream API request went unanswered.
	ErrRequestTimeout = errors.New("downlink: hub API request timed out")
	// ErrLinkLost means the connection to the hub dropped, as the Hub
	// (a LinkWatcher) reported.
	ErrLinkLost = errors.New("downlink: the connection to the hub dropped")
	// ErrClosed is returned by Start after Close.
	ErrClosed = errors.New("downlink: closed")
)

// Hub is the path toward the hub, as the downlink sees it.
type Hub interface {
	// WaitReady blocks until a message published now can reach the hub
	// and the hub's answers to InboxPrefix() reach HandleMsg, or ctx
	// ends.
	WaitReady(ctx context.Context) error
	// Publish sends one message toward the hub. It returns an error when
	// the message cannot be sent now. The slices are borrowed for the
	// call.
	Publish(subject, reply string, hdr, data []byte) error
}

// LinkWatcher is implemented by a Hub that knows when its connection to
// the hub drops. The downlink then ends its session at once, instead of
// after a missing heartbeat, and starts a new one when the hub is back.
type LinkWatcher interface {
	// Lost returns a channel closed when the connection to the hub that
	// is up at the call is gone (at once when none is up). Watching ends
	// with ctx.
	Lost(ctx context.Context) <-chan struct{}
}

// Msg is a hub message to deliver locally. Its slices belong to the
// downlink and are valid only during Local.Deliver.
type Msg struct {
	// Subject is the local subject; HubSubject the subject in the hub
	// stream.
	Subject, HubSubject string
	// Header is the stored NATS header block, or nil; Data the payload.
	Header, Data []byte
	// Stream and Seq are the hub stream and the message's sequence in it.
	Stream string
	Seq    uint64
	// ID is unique per hub message and stable across redeliveries
	// ("<stream>.<seq>"), for use as a local Nats-Msg-Id.
	ID string
}

// Local delivers messages on the gateway.
type Local interface {
	// Deliver publishes m locally and returns nil once it was delivered
	// (stored, when a local stream captures the subject). An error makes
	// the hub send it again later.
	Deliver(ctx context.Context, m Msg) error
}

// Config configures a Downlink.
type Config struct {
	// Name is the downlink's name, for logs and status.
	Name string
	// Stream is the hub stream to consume; Durable the consumer's durable
	// name. Both are required.
	Stream, Durable string
	// Domain is the hub's JetStream domain (DefaultDomain when empty):
	// requests go to $JS.<Domain>.API.
	Domain string
	// FilterSubjects restrict the consumer to these hub subjects; none
	// consumes the whole stream.
	FilterSubjects []string
	// HubPrefix is removed from a hub subject that starts with it, and
	// LocalPrefix prepended: with "cmd.site1." and "cmd." the hub subject
	// "cmd.site1.door.open" is delivered on "cmd.door.open".
	HubPrefix, LocalPrefix string
	// MaxAckPending bounds the messages outstanding toward the gateway
	// (DefaultMaxAckPending when 0).
	MaxAckPending int
	// Batch is the size of one pull request (DefaultBatch when 0).
	Batch int
	// AckWait is the consumer's ack wait (DefaultAckWait when 0).
	AckWait time.Duration
	// MaxDeliver bounds the deliveries of one message; after that the hub
	// gives up on it and the downlink counts it as skipped. 0 is
	// unlimited: a message that always fails locally holds up the ones
	// after it. It needs MaxAckPending 1, so that no message waiting
	// behind a failing one uses up its deliveries.
	MaxDeliver int
	// Expires is a pull request's lifetime (DefaultExpires when 0, at
	// least one second).
	Expires time.Duration
	// RequestTimeout bounds an API request (DefaultRequestTimeout when 0).
	RequestTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between sessions and the
	// nak delay after local failures.
	RetryMin, RetryMax time.Duration
	// Logger receives the downlink's logs; nil discards them.
	Logger *slog.Logger
}

// State is what the downlink is doing.
type State string

// Downlink states.
const (
	StateIdle    State = "idle"    // not started
	StateWaiting State = "waiting" // waiting for the hub
	StateBinding State = "binding" // creating or binding the consumer
	StatePulling State = "pulling" // pulling and delivering
	StateBackoff State = "backoff" // a session failed; waiting to retry
	StateClosed  State = "closed"
)

// Status is a snapshot of a Downlink's counters.
type Status struct {
	Name    string
	State   State
	Stream  string
	Durable string
	// Delivered counts messages delivered locally; Acked the acks the hub
	// confirmed.
	Delivered, Acked uint64
	// Redelivered counts messages the hub sent more than once; Duplicates
	// those among them delivered here already, acked again instead.
	Redelivered, Duplicates uint64
	// Failed counts local deliveries that failed (each nak'ed); Skipped
	// failed messages the hub did not send again (its max deliver, or the
	// stream lost them), after which later ones went on.
	Failed, Skipped uint64
	// Pulls counts pull requests; Sessions consumer bindings.
	Pulls, Sessions uint64
	// Resends counts bindings after which the hub was asked to send its
	// outstanding message again at once (max ack pending 1 only).
	Resends uint64
	// Pending is the number of hub messages after the last one received,
	// as the hub reported it.
	Pending uint64
	// LastSeq is the hub stream sequence of the last message delivered.
	LastSeq uint64
	// LastError is the last failure, and LastErrorAt its time.
	LastError   string
	LastErrorAt time.Time
}

// Downlink consumes a hub stream into local subjects. It is safe for
// concurrent use; build it with New.
type Downlink struct {
	cfg     Config
	hub     Hub
	local   Local
	log     *slog.Logger
	inbox   string // reply prefix, ending in '.'
	api     string // "$JS.<domain>.API."
	hbLimit time.Duration

	delivered, acked, redelivered, duplicates atomic.Uint64
	failed, skipped, pulls, sessions          atomic.Uint64
	resets                                    atomic.Uint64
	pending, lastSeq                          atomic.Uint64

	evSig  chan struct{}
	evMu   sync.Mutex
	events []event // received, not yet taken

	// Owned by the run goroutine.
	stash       []event              // taken while awaiting an API answer
	requests    uint64               // API requests and pulls sent, for reply subjects
	unconfirmed map[uint64]time.Time // delivered and acked (when), ack not confirmed
	confirmOrd  []uint64             // unconfirmed in insertion order
	highWater   uint64               // highest sequence delivered or acked on the hub
	waiting     map[uint64]waiter    // nak'ed, not delivered since: later ones wait
	holdDelay   time.Duration        // the nak delay of messages waiting behind others
	localFails  int
	lost        <-chan struct{} // closed when the session's connection drops

	rs      runstate.Tracker[State]
	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// waiter is a message the downlink nak'ed and waits for: one that failed
// locally, or one held back behind such.
type waiter struct {
	until  time.Time // when to stop waiting for it
	failed bool      // it failed locally
}

// ackPrefix starts the reply subject of a stream message.
const ackPrefix = "$JS.ACK."

// event is a message received on the inbox.
type event struct {
	subject, reply string
	hdr, data      []byte
}

// New returns a Downlink that delivers through local what it consumes
// from the hub; it runs once started.
func New(hub Hub, local Local, cfg Config) (*Downlink, error) {
	if hub == nil || local == nil {
		return nil, errors.New("downlink: hub and local are required")
	}
	if cfg.Name == "" {
		return nil, errors.New("downlink: name is required")
	}
	if !jsapi.ValidName(cfg.Stream) {
		return nil, fmt.Errorf("downlink: invalid stream name %q", cfg.Stream)
	}
	if !jsapi.ValidName(cfg.Durable) {
		return nil, fmt.Errorf("downlink: invalid durable name %q", cfg.Durable)
	}
	if cfg.Domain == "" {
		cfg.Domain = DefaultDomain
	}
	if !jsapi.ValidName(cfg.Domain) {
		return nil, fmt.Errorf("downlink: invalid domain %q", cfg.Domain)
	}
	if cfg.MaxAckPending <= 0 {
		cfg.MaxAckPending = DefaultMaxAckPending
	}
	if cfg.MaxDeliver > 0 && cfg.MaxAckPending != 1 {
		return nil, errors.New("downlink: max deliver needs max ack pending 1")
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = DefaultAckWait
	}
	if cfg.Expires <= 0 {
		cfg.Expires = DefaultExpires
	}
	cfg.Expires = max(cfg.Expires, time.Second)
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = max(DefaultRetryMax, cfg.RetryMin)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	d := &Downlink{
		cfg:         cfg,
		hub:         hub,
		local:       local,
		log:         log.With("downlink", cfg.Name),
		inbox:       "_INBOX.DL." + hex.EncodeToString(rnd[:]) + ".",
		api:         "$JS." + cfg.Domain + ".API.",
		evSig:       make(chan struct{}, 1),
		unconfirmed: map[uint64]time.Time{},
		waiting:     map[uint64]waiter{},
		done:        make(chan struct{}),
	}
	d.rs.Set(StateIdle)
	d.hbLimit = 2 * d.heartbeat()
	return d, nil
}

// heartbeat is the idle heartbeat asked for in pull requests: a quarter
// of the expiry, at most maxHeartbeat (the hub refuses one over half).
func (d *Downlink) heartbeat() time.Duration {
	return min(d.cfg.Expires/4, maxHeartbeat)
}

// InboxPrefix is the prefix of every reply subject the downlink uses,
// ending in '.'. The caller subscribes InboxPrefix()+">" where the hub's
// answers arrive and passes them to HandleMsg.
func (d *Downlink) InboxPrefix() string { return d.inbox }

// HandleMsg takes a message received on InboxPrefix()+">", copying the
// slices. A stream message the hub delivers shows its stream subject and
// an ack reply subject; answers and statuses show the inbox subject. It
// never blocks; the downlink's goroutine processes it.
func (d *Downlink) HandleMsg(subject, reply string, hdr, data []byte) {
	if !strings.HasPrefix(subject, d.inbox) && !strings.HasPrefix(reply, ackPrefix) {
		return
	}
	ev := event{subject: subject, reply: reply}
	if len(hdr) > 0 {
		ev.hdr = append([]byte(nil), hdr...)
	}
	if len(data) > 0 {
		ev.data = append([]byte(nil), data...)
	}
	d.evMu.Lock()
	d.events = append(d.events, ev)
	d.evMu.Unlock()
	runstate.Signal(d.evSig)
}

// queued reports whether received events wait to be taken.
func (d *Downlink) queued() bool {
	d.evMu.Lock()
	defer d.evMu.Unlock()
	return len(d.events) > 0
}

// take returns the stashed and the received events, in arrival order.
func (d *Downlink) take() []event {
	d.evMu.Lock()
	evs := d.events
	d.events = nil
	d.evMu.Unlock()
	if len(d.stash) > 0 {
		evs = append(d.stash, evs...)
		d.stash = nil
	}
	return evs
}

// Start launches the downlink; it returns at once. Cancelling ctx stops
// it as Close does, except that Close also waits.
func (d *Downlink) Start(ctx context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return ErrClosed
	}
	if d.started {
		return nil
	}
	d.started = true
	ctx, d.cancel = context.WithCancel(ctx)
	d.rs.Set(StateWaiting)
	go d.run(ctx)
	return nil
}

// Close stops the downlink and waits for it, and for the hub to confirm
// the acks sent (at most DrainTimeout). Calling it again does nothing.
func (d *Downlink) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	started := d.started
	if d.cancel != nil {
		d.cancel()
	}
	d.rs.Close(StateClosed)
	d.mu.Unlock()
	if started {
		<-d.done
	}
	return nil
}

// Wait returns nil once cond holds for the downlink's Status, or ctx's
// error when ctx ends first. cond gets a fresh Status at once and after
// every change of it: each message handled, ack confirmed, pull, resend,
// and each change of the state or last error.
func (d *Downlink) Wait(ctx context.Context, cond func(Status) bool) error {
	return d.rs.Wait(ctx, func() bool { return cond(d.Status()) })
}

// Status returns a snapshot of the counters.
func (d *Downlink) Status() Status {
	s := Status{
		Name:        d.cfg.Name,
		Stream:      d.cfg.Stream,
		Durable:     d.cfg.Durable,
		Delivered:   d.delivered.Load(),
		Acked:       d.acked.Load(),
		Redelivered: d.redelivered.Load(),
		Duplicates:  d.duplicates.Load(),
		Failed:      d.failed.Load(),
		Skipped:     d.skipped.Load(),
		Pulls:       d.pulls.Load(),
		Sessions:    d.sessions.Load(),
		Resends:     d.resets.Load(),
		Pending:     d.pending.Load(),
		LastSeq:     d.lastSeq.Load(),
	}
	s.State, s.LastError, s.LastErrorAt = d.rs.Snapshot()
	return s
}

// run runs sessions until ctx ends, backing off after each failure.
func (d *Downlink) run(ctx context.Context) {
	defer close(d.done)
	failures := 0
	for {
		d.rs.Set(StateWaiting)
		err := d.hub.WaitReady(ctx)
		ready := err == nil
		if ready {
			sctx, cancel := context.WithCancel(ctx)
			d.lost = d.watchLink(sctx)
			var progress bool
			progress, err = d.session(ctx)
			cancel()
			if progress {
				failures = 0
			}
		}
		if ctx.Err() != nil {
			return
		}
		d.rs.SetError(err)
		d.log.Warn("downlink session ended; retrying", "error", err)
		wait := d.backoff(0)
		if ready {
			wait = d.backoff(failures)
			failures++
		} // else WaitReady waits for the hub itself: a long outage must not stretch the wait after it
		d.rs.Set(StateBackoff)
		if !runstate.Sleep(ctx, wait) {
			return
		}
	}
}

// watchLink returns a channel closed when the hub's connection up now
// drops, or nil when the Hub cannot tell.
func (d *Downlink) watchLink(ctx context.Context) <-chan struct{} {
	if w, ok := d.hub.(LinkWatcher); ok {
		return w.Lost(ctx)
	}
	return nil
}

// backoff returns the wait after n consecutive failures (runstate.Backoff
// between RetryMin and RetryMax).
func (d *Downlink) backoff(n int) time.Duration {
	return runstate.Backoff(n, d.cfg.RetryMin, d.cfg.RetryMax)
}

// session binds the consumer and pulls until something fails or ctx
// ends; it reports whether any message was delivered.
func (d *Downlink) session(ctx context.Context) (progress bool, err error) {
	d.sessions.Add(1)
	d.rs.Set(StateBinding)
	info, err := d.bind(ctx)
	if err != nil {
		return false, err
	}
	d.log.Info("downlink bound", "stream", d.cfg.Stream, "durable", d.cfg.Durable,
		"num_pending", info.NumPending, "num_ack_pending", info.NumAckPending)
	d.highWater = max(d.highWater, info.AckFloor.StreamSeq)
	if d.cfg.MaxAckPending == 1 && info.NumAckPending > 0 {
		d.resend(ctx)
	}
	d.rs.Set(StatePulling)

	current, err := d.pull()
	if err != nil {
		return false, err
	}
	received := 0
	lastHeard := time.Now()
	timer := time.NewTimer(d.hbLimit)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			d.drain()
			return progress, ctx.Err()
		case <-d.lost:
			return progress, ErrLinkLost
		case <-timer.C:
			if left := d.hbLimit - time.Since(lastHeard); left > 0 || d.queued() {
				// Messages waiting behind a slow local delivery count as
				// heard once taken.
				timer.Reset(max(left, d.hbLimit/4))
				if left > 0 {
					continue
				}
			} else {
				return progress, fmt.Errorf("%w for %v", ErrNoHeartbeat, d.hbLimit)
			}
		case <-d.evSig:
		}
		renew := false
		for _, ev := range d.take() {
			if strings.HasPrefix(ev.reply, ackPrefix) {
				// Counted against the current request even when an
				// earlier one delivered it: at worst a pull is renewed
				// early.
				received++
				lastHeard = time.Now()
				ok, err := d.handle(ctx, ev)
				if err != nil {
					return progress, err
				}
				progress = progress || ok
				continue
			}
			kind, tail := d.classify(ev.subject)
			switch kind {
			case 'a':
				d.confirm(tail)
			case 'p':
				if tail != current {
					continue // a status of an earlier request
				}
				lastHeard = time.Now()
				code, desc := status(ev.hdr)
				switch {
				case code == 100: // idle heartbeat
				case code == 404 || code == 408 || (code == 409 && strings.Contains(desc, "Batch Completed")):
					renew = true
				case code == 0:
					d.log.Debug("downlink: message without ack subject ignored")
				default:
					return progress, fmt.Errorf("downlink: pull answered %d %s", code, desc)
				}
			}
		}
		if renew || received >= d.cfg.Batch {
			if current, err = d.pull(); err != nil {
				return progress, err
			}
			received = 0
			lastHeard = time.Now()
		}
	}
}

// drain waits up to DrainTimeout for the hub to confirm the acks sent,
// so that a stopping gateway does not leave delivered messages for the
// hub to send again. Other messages are left to the hub's redelivery.
func (d *Downlink) drain() {
	// Acks older than the ack wait are not waited for: the hub has
	// applied them, or sent the message again already.
	recent := func() int {
		n := 0
		for _, at := range d.unconfirmed {
			if time.Since(at) < d.cfg.AckWait {
				n++
			}
		}
		return n
	}
	timer := time.NewTimer(DrainTimeout)
	defer timer.Stop()
	for recent() > 0 {
		select {
		case <-timer.C:
			d.log.Warn("downlink stopped with acks unconfirmed; the hub may send those messages again", "unconfirmed", recent())
			return
		case <-d.evSig:
		}
		for _, ev := range d.take() {
			if kind, tail := d.classify(ev.subject); kind == 'a' {
				d.confirm(tail)
			}
		}
	}
}

// classify returns what an inbox subject answers ('c' API request, 'p'
// pull, 'a' ack) and the rest of it.
func (d *Downlink) classify(subject string) (byte, string) {
	tail, _ := strings.CutPrefix(subject, d.inbox)
	if len(tail) < 2 || tail[1] != '.' {
		return 0, ""
	}
	return tail[0], tail[2:]
}

// handle delivers one hub message locally and acks it, or naks it when
// the delivery fails or an earlier message waits. It reports whether the
// message was delivered; an error means the hub is out of reach.
func (d *Downlink) handle(ctx context.Context, ev event) (bool, error) {
	defer d.rs.Changed() // the counters below, and blocked's
	meta, ok := parseAck(ev.reply)
	if !ok {
		d.log.Warn("downlink: unexpected ack subject; message ignored", "reply", ev.reply)
		return false, nil
	}
	d.pending.Store(meta.pending)
	if meta.delivered > 1 {
		d.redelivered.Add(1)
	}
	_, done := d.unconfirmed[meta.streamSeq]
	if !done && d.cfg.MaxAckPending == 1 && meta.streamSeq <= d.highWater {
		// One message outstanding at a time: the hub sends the stream in
		// order, so an earlier sequence was delivered here already (its
		// ack was lost, or a crashed hub forgot it).
		done = true
	}
	if done {
		d.duplicates.Add(1)
		return false, d.ack(ev.reply, meta.streamSeq)
	}
	if d.blocked(meta.streamSeq) {
		w := d.waiting[meta.streamSeq]
		w.until = time.Now().Add(2 * (d.holdDelay + d.cfg.AckWait))
		d.waiting[meta.streamSeq] = w
		return false, d.nak(ev.reply, d.holdDelay)
	}
	m := Msg{
		HubSubject: ev.subject,
		Subject:    d.LocalSubject(ev.subject),
		Header:     ev.hdr,
		Data:       ev.data,
		Stream:     d.cfg.Stream,
		Seq:        meta.streamSeq,
		ID:         d.cfg.Stream + "." + strconv.FormatUint(meta.streamSeq, 10),
	}
	if err := d.local.Deliver(ctx, m); err != nil {
		d.failed.Add(1)
		d.localFails++
		delay := d.backoff(d.localFails - 1)
		d.holdDelay = delay
		d.waiting[meta.streamSeq] = waiter{until: time.Now().Add(2 * (delay + d.cfg.AckWait)), failed: true}
		err = fmt.Errorf("downlink: deliver %s (hub seq %d): %w", m.Subject, meta.streamSeq, err)
		d.rs.SetError(err)
		if d.cfg.MaxDeliver > 0 && meta.delivered >= uint64(d.cfg.MaxDeliver) {
			// The hub sends it no more: later ones go on.
			d.log.Error("downlink: message failed its last delivery; skipped",
				"seq", meta.streamSeq, "deliveries", meta.delivered, "error", err)
			d.skipped.Add(1)
			d.localFails = 0
			delete(d.waiting, meta.streamSeq)
			return false, d.nak(ev.reply, 0)
		}
		d.log.Warn("downlink delivery failed; the hub sends it again", "error", err, "delay", delay)
		return false, d.nak(ev.reply, delay)
	}
	d.localFails = 0
	delete(d.waiting, meta.streamSeq)
	d.delivered.Add(1)
	d.lastSeq.Store(meta.streamSeq)
	d.highWater = max(d.highWater, meta.streamSeq)
	d.remember(meta.streamSeq)
	return true, d.ack(ev.reply, meta.streamSeq)
}

// blocked reports whether a message nak'ed earlier with a lower sequence
// is still awaited, so that seq must wait behind it. Awaited messages
// that did not come back in time (the hub stream lost them to its limits,
// or they were deleted) are given up first.
func (d *Downlink) blocked(seq uint64) bool {
	now := time.Now()
	blocked := false
	for s, w := range d.waiting {
		if now.After(w.until) {
			delete(d.waiting, s)
			if w.failed {
				d.log.Error("downlink: a failed message did not come back; later ones go on", "seq", s)
				d.skipped.Add(1)
			}
			continue
		}
		if s < seq {
			blocked = true
		}
	}
	return blocked
}

// LocalSubject maps a hub subject to the local one: HubPrefix removed
// when the subject starts with it, LocalPrefix added.
func (d *Downlink) LocalSubject(hubSubject string) string {
	s := hubSubject
	if d.cfg.HubPrefix != "" {
		if rest, ok := strings.CutPrefix(s, d.cfg.HubPrefix); ok && rest != "" {
			s = rest
		}
	}
	return d.cfg.LocalPrefix + s
}

// remember records seq as delivered with its ack not yet confirmed.
func (d *Downlink) remember(seq uint64) {
	if _, ok := d.unconfirmed[seq]; ok {
		return
	}
	d.unconfirmed[seq] = time.Now()
	d.confirmOrd = append(d.confirmOrd, seq)
	for len(d.confirmOrd) > maxUnconfirmed {
		delete(d.unconfirmed, d.confirmOrd[0])
		d.confirmOrd = d.confirmOrd[1:]
	}
}

// confirm applies the hub's answer to the ack of sequence tail.
func (d *Downlink) confirm(tail string) {
	seq, err := strconv.ParseUint(tail, 10, 64)
	if err != nil {
		return
	}
	if _, ok := d.unconfirmed[seq]; !ok {
		return
	}
	delete(d.unconfirmed, seq)
	d.acked.Add(1)
	d.rs.Changed()
	if len(d.unconfirmed) == 0 {
		d.confirmOrd = d.confirmOrd[:0]
	}
}

// ack acknowledges a message, asking the hub to confirm.
func (d *Downlink) ack(reply string, seq uint64) error {
	if err := d.hub.Publish(reply, d.inbox+"a."+strconv.FormatUint(seq, 10), nil, []byte("+ACK")); err != nil {
		return fmt.Errorf("downlink: ack: %w", err)
	}
	return nil
}

// nak asks the hub to send a message again after delay.
func (d *Downlink) nak(reply string, delay time.Duration) error {
	body := `-NAK {"delay":` + strconv.FormatInt(int64(delay), 10) + `}`
	if err := d.hub.Publish(reply, "", nil, []byte(body)); err != nil {
		return fmt.Errorf("downlink: nak: %w", err)
	}
	return nil
}

// ackMeta is what an ack subject tells about a delivery.
type ackMeta struct {
	delivered, streamSeq, consumerSeq, pending uint64
}

// parseAck reads a $JS.ACK subject, in the 9-token form
// $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending> or
// the form with domain and account hash (11 tokens or more).
func parseAck(reply string) (ackMeta, bool) {
	toks := strings.Split(reply, ".")
	var nums []string
	switch {
	case len(toks) == 9:
		nums = toks[4:9]
	case len(toks) >= 11:
		nums = toks[6:11]
	default:
		return ackMeta{}, false
	}
	var v [5]uint64
	for i, s := range nums {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return ackMeta{}, false
		}
		v[i] = n
	}
	return ackMeta{delivered: v[0], streamSeq: v[1], consumerSeq: v[2], pending: v[4]}, true
}

// status returns the status code and description of a status message's
// header block ("NATS/1.0 408 Request Timeout"), or 0 (proto.ParseStatus).
func status(hdr []byte) (int, string) {
	code, desc := proto.ParseStatus(hdr)
	return code, string(desc)
}

// truncate shortens a payload for an error message.
func truncate(b []byte) string {
	if len(b) > 64 {
		return string(b[:64]) + "…"
	}
	return string(b)
}
