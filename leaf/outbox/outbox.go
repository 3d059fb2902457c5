package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/leaf/internal/runstate"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Defaults applied to zero Config fields.
const (
	// DefaultWindow is how many messages may await their PubAck at once
	// when the first round starts (a later one starts at half the last
	// one's window, not below it); the window then follows the link's
	// bandwidth-delay product up to MaxWindow (see window.go).
	DefaultWindow = 256
	// DefaultAckTimeout is how long the forwarder waits for the PubAck of
	// the oldest message in flight before it starts the round again.
	DefaultAckTimeout = 5 * time.Second
	// DefaultRetryMin and DefaultRetryMax bound the exponential backoff
	// between rounds.
	DefaultRetryMin = 100 * time.Millisecond
	DefaultRetryMax = 10 * time.Second
)

// Header names the forwarder sets.
const (
	HeaderMsgID          = "Nats-Msg-Id"
	HeaderExpectedStream = "Nats-Expected-Stream"
)

// Drop reasons reported in Status.Dropped.
const (
	DropLimits     = "limits"      // evicted by the stream's limits (discard old)
	DropRejected   = "rejected"    // refused by a full stream under discard new
	DropStoreError = "store_error" // the store failed
	DropStoreFull  = "store_full"  // the disk (or the store's capacity) was full
	DropDiskLow    = "disk_low"    // the oldest, dropped to make room while the disk ran low (Config.DiskLow)
)

// DropReasons lists every reason Status.Dropped can hold, for monitoring
// that reports each one, zero included.
var DropReasons = []string{DropLimits, DropAge, DropRejected, DropDiskLow, DropStoreFull, DropStoreError, DropRejectedByHub, DropDeadLetterLimits}

// Errors the forwarder records in Status.LastError.
var (
	// ErrAckTimeout means a PubAck did not arrive within AckTimeout.
	ErrAckTimeout = errors.New("outbox: PubAck timeout")
	// ErrWrongStream means the hub stored a message in another stream
	// than Config.Stream.
	ErrWrongStream = errors.New("outbox: PubAck from an unexpected stream")
	// ErrClosed is returned by Start after Close.
	ErrClosed = errors.New("outbox: closed")
	// ErrStuck means the stuck-backlog watchdog restarted a round.
	ErrStuck = errors.New("outbox: backlog stuck; watchdog restarted the round")
)

// Hub is the path toward the hub, as the forwarder sees it.
type Hub interface {
	// WaitReady blocks until a message published now can reach the hub
	// (the link is up and the hub's interest is known), or ctx ends.
	WaitReady(ctx context.Context) error
	// Publish sends one message toward the hub with reply as its reply
	// subject, where the hub's PubAck must reach HandleReply. It returns
	// an error when the message cannot be sent now. The slices are
	// borrowed for the call.
	Publish(subject, reply string, hdr, data []byte) error
}

// Config configures an Outbox.
type Config struct {
	// Name is the uplink's name; with ServerName it makes Nats-Msg-Id
	// unique per gateway and uplink. It must not hold blanks or dots.
	Name string
	// ServerName identifies the gateway in Nats-Msg-Id.
	ServerName string
	// HubPrefix is prepended to a captured message's subject toward the
	// hub ("site1." turns "telemetry.t1" into "site1.telemetry.t1").
	HubPrefix string
	// Stream is the hub stream expected to store the messages ("" accepts
	// any). It is sent as Nats-Expected-Stream and checked in PubAcks.
	Stream string
	// Window bounds the messages in flight when the first round starts
	// (DefaultWindow when 0), and is the least the window shrinks to; a
	// later round starts at half the window the last one reached.
	Window int
	// MaxWindow is the most messages the window grows to, from the
	// measured round trip and delivery rate (see window.go): DefaultMaxWindow
	// when both it and Window are 0, Window (a fixed window) when only
	// Window is set. MaxWindowBytes bounds the bytes in flight
	// (DefaultMaxWindowBytes when 0).
	MaxWindow, MaxWindowBytes int
	// AckTimeout bounds the wait for a PubAck (DefaultAckTimeout when 0).
	AckTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between rounds.
	RetryMin, RetryMax time.Duration
	// Logger receives the forwarder's logs; nil discards them.
	Logger *slog.Logger
	// Clock, when set, stamps captured messages (HeaderBootID, HeaderMono,
	// HeaderTime) and ages them for MaxAge; see age.go.
	Clock Clock
	// MaxAge, when > 0, expires messages older than it (see expireAged);
	// give the stream no MaxAge of its own. AgeInterval is how often it
	// looks (DefaultAgeInterval or MaxAge/4 when 0).
	MaxAge, AgeInterval time.Duration

	// Scheduler is shared by the gateway's outboxes to order and pace
	// their publishes; nil gives the Outbox a private one.
	Scheduler *Scheduler
	// Priority is the uplink's class in its Scheduler: higher goes first.
	Priority int
	// MaxRate caps the bytes per second this uplink publishes; 0 is
	// unlimited.
	MaxRate int64
	// DailyBudget caps the bytes this uplink publishes per UTC day; 0 is
	// unlimited. Once used up the uplink stops until 00:00 UTC.
	DailyBudget int64
	// DrainJitter delays the first round after the hub became ready, when
	// a backlog waits, by a random duration in [0, DrainJitter], so that a
	// fleet of gateways reconnecting together spreads its load.
	DrainJitter time.Duration
	// WatchdogAfter is how long a ready link may go with a backlog but no
	// publish and no ack before the watchdog restarts the round
	// (3×AckTimeout when 0).
	WatchdogAfter time.Duration
	// DiskLow, when set, reports whether the disk under the stream is
	// running low on space. While it does, Capture drops the oldest
	// message before it stores a new one (counted as DropDiskLow), so a
	// discard-old outbox makes room by policy before the disk is full,
	// instead of refusing new messages (DropStoreFull) once it is. Leave
	// it nil for a discard-new outbox.
	DiskLow func() bool
	// StateFile persists the last hub sequence acknowledged per hub
	// stream, to detect a recreated stream across restarts; "" keeps it
	// in memory only.
	StateFile string

	// DeadLetter, when set, is the stream the messages the hub refuses
	// for good move to (see doc.go, "Dead letters"); it must sync in
	// Store. Without it a refused message is counted and retried in
	// order forever.
	DeadLetter store.Stream
	// DeadLetterAfter is how many permanent refusals of one message move
	// it to DeadLetter (DefaultDeadLetterAfter when 0).
	DeadLetterAfter int
	// Batch forwards in JetStream fast batches where the hub stream takes
	// them (allow_batched), a flow ack every few hundred messages instead
	// of a PubAck each (doc.go, "Batches"); where it does not, the
	// forwarder falls back to per-message publishes by itself. Without it
	// every message is its own publish with its own PubAck.
	Batch bool

	// HubDomain is the hub's JetStream domain. When set, a message the hub
	// has no interest in, or whose PubAck is missing, is looked up with
	// $JS.<HubDomain>.API.STREAM.NAMES: a definite "no stream captures
	// it" is a permanent refusal (ReasonNoStream). Without it such
	// failures are transient.
	HubDomain string
}

// State is what the forwarder is doing.
type State string

// Forwarder states.
const (
	StateIdle       State = "idle"        // not started
	StateWaiting    State = "waiting"     // waiting for the hub
	StateForwarding State = "forwarding"  // connected: sending and awaiting acks
	StateBackoff    State = "backoff"     // a round failed; waiting to retry
	StateDelay      State = "drain_delay" // the hub is ready; waiting out DrainJitter before draining
	StateClosed     State = "closed"
)

// Status is a snapshot of an Outbox's counters, for logs and monitoring.
type Status struct {
	Name  string
	State State
	// Captured counts Capture calls; Stored those the stream accepted.
	Captured, Stored uint64
	// Forwarded counts publishes toward the hub, retries included; Acked
	// the messages removed after their PubAck.
	Forwarded, Acked uint64
	// Dropped counts lost messages by reason (DropLimits, DropAge,
	// DropRejected, DropStoreError, DropStoreFull); a reason is listed
	// only when non-zero.
	Dropped map[string]uint64
	// Retries counts failed rounds; WrongStream PubAcks from an
	// unexpected stream.
	Retries, WrongStream uint64
	// InFlight is the number of messages awaiting a PubAck.
	InFlight int
	// BacklogMsgs and BacklogBytes describe the stream; OldestAge is the
	// age of its first message (0 when empty or unknown: see age.go).
	BacklogMsgs, BacklogBytes uint64
	OldestAge                 time.Duration
	// LastError is the last failure, and LastErrorAt its time.
	LastError   string
	LastErrorAt time.Time

	// AckedBytes counts the bytes (subject, header, payload as
	// published) of the acknowledged messages.
	AckedBytes uint64
	// AckedPayloadBytes counts the payload bytes alone of the
	// acknowledged messages.
	AckedPayloadBytes uint64
	// RateMsgs and RateBytes are the drain rate, acknowledged messages
	// and bytes per second, as an exponentially weighted moving average
	// over the forwarder's ~1 s ticks.
	RateMsgs, RateBytes float64
	// ETA estimates the time to drain the backlog at RateMsgs; 0 when the
	// backlog is empty or nothing drains.
	ETA time.Duration
	// WatchdogRearms counts rounds the stuck-backlog watchdog restarted.
	WatchdogRearms uint64
	// StreamResets counts PubAcks whose hub sequence was not above the
	// last one seen for their stream: the hub stream was recreated.
	StreamResets uint64
	// Mode is how the forwarder sends: ModeBatch (JetStream fast
	// batches, a flow ack every few hundred messages) or ModePerMessage
	// (a PubAck each: without Config.Batch, or toward a hub stream
	// without allow_batched).
	Mode string
	// Reordered counts messages the hub stored after a message captured
	// later, found from the PubAcks' hub sequences. Only per-message
	// publishes can do it: when the hub stream's leader dies with
	// messages in flight, the ones it had not replicated are lost while
	// later ones reach the next leader, and their resend lands behind
	// them. Fast batches cannot (doc.go, "Batches"); it stays 0.
	Reordered uint64
	// HubStream and HubSeq are the stream and sequence of the last new
	// (not duplicate) message the hub acknowledged.
	HubStream string
	HubSeq    uint64
	// Priority, MaxRate and DailyBudget echo the configuration;
	// BudgetUsed is the bytes published today (UTC).
	Priority             int
	MaxRate, DailyBudget int64
	BudgetUsed           int64
	// Waiting is why the Scheduler holds the forwarder: WaitRate,
	// WaitPriority, WaitBudget, or "" when it is not held.
	Waiting string

	// Refusals counts permanent refusals by the hub (each attempt);
	// DeadLettered the messages moved to the dead-letter stream (also
	// Dropped[DropRejectedByHub]), Requeued those moved back, and
	// DeadLetterMsgs what the dead-letter stream holds now.
	Refusals, DeadLettered, Requeued, DeadLetterMsgs uint64
	// HubDuplicatesUnexpected counts PubAcks with "duplicate": true for a
	// message sent for the first time: the hub dropped a message it never
	// had, because its Nats-Msg-Id collided. They are not acked.
	HubDuplicatesUnexpected uint64
	// LastRejection is the last permanent refusal, and LastRejectionAt
	// its time.
	LastRejection   string
	LastRejectionAt time.Time
}

// Outbox captures messages into a stream and forwards them to a hub. It
// is safe for concurrent use; build it with New.
type Outbox struct {
	cfg    Config
	stream store.Stream
	syncer store.Syncer // the stream's, when its Store defers the fsync
	hub    Hub
	log    *slog.Logger
	inbox  string // reply prefix, ending in '.'
	base   uint64 // messages in the stream at New

	// idBase ("<server>.<name>.<epoch>.") and ids, the last number used,
	// make the Nats-Msg-Id Capture fixes for each message; legacyBase
	// ("<server>.<name>.") is the prefix sent with a message stored
	// without one (captured before ids were fixed at capture), with its
	// sequence, as it was sent then.
	idBase, legacyBase string
	ids                atomic.Uint64

	captured, stored, forwarded, acked atomic.Uint64
	rejected, storeErrors, aged        atomic.Uint64
	storeFull, diskLow                 atomic.Uint64
	retries, wrongStream               atomic.Uint64
	reordered                          atomic.Uint64
	order                              orderCheck // the forwarder's alone
	inFlight                           atomic.Int64
	rounds                             uint64 // the forwarder's current round; only it uses it

	// Dead letters (deadletter.go). refusedCount is the permanent
	// refusals per outbox sequence, sentMax the highest sequence ever
	// published and openSeq the last one at New (a higher sequence was
	// captured by this process); lookups numbers stream lookups. The
	// forwarder alone uses those four.
	refusals, deadLettered, requeued atomic.Uint64
	dupUnexpected                    atomic.Uint64
	lastRefusal                      atomic.Pointer[refusal]
	refusedCount                     map[uint64]int
	sentMax, openSeq, lookups        uint64
	deadBase                         uint64            // messages in the dead-letter stream at New
	lookupCh                         chan lookupAnswer // answers to stream lookups
	requeueMu                        sync.Mutex

	// durable is the highest sequence known to be on disk with every
	// earlier one: whose Store returned, with a stream that syncs in
	// Store, or that a Sync covered, with a store.Syncer. The forwarder
	// sends nothing beyond it, so a message a power cut can still lose
	// (and whose sequence the next message would reuse) never reaches the
	// hub. written is the highest sequence whose Store returned; syncMu
	// serializes Syncs.
	durable, written atomic.Uint64
	syncMu           sync.Mutex

	sched *Scheduler
	slot  *slot
	win   window // the forwarder's window (window.go); only it uses it
	meter meter  // drain rate, watchdog and hub sequences

	names subject.Names // captured subjects, so a repeated one costs no allocation

	newMsg  chan struct{} // signalled by Capture
	ackSig  chan struct{} // signalled by HandleReply
	ackMu   sync.Mutex
	ackList []reply // replies not yet processed

	// The age loop's cursors (age.go); only it uses them.
	ageSkipTrusted, ageSkipUntrusted uint64
	ageDone                          chan struct{} // closed when the age loop ends; nil without MaxAge

	mode batchMode // batches or per-message publishes (batch.go)

	rs      runstate.Tracker[State]
	mu      sync.Mutex
	started bool
	closed  bool
	cancel  context.CancelFunc
	done    chan struct{}
}

// reply is a PubAck received for a sequence in a round, or a fast batch
// reply (batch set, seq the batch sequence of its reply subject).
type reply struct {
	round, seq uint64
	batch      string
	data       []byte
}

// New returns an Outbox over stream, which must be empty or hold an
// earlier Outbox's messages; the caller closes it after Close. It forwards
// once started.
func New(stream store.Stream, hub Hub, cfg Config) (*Outbox, error) {
	if stream == nil || hub == nil {
		return nil, errors.New("outbox: stream and hub are required")
	}
	if !jsapi.ValidName(cfg.Name) {
		return nil, fmt.Errorf("outbox: invalid name %q", cfg.Name)
	}
	if strings.ContainsAny(cfg.ServerName, " \t\r\n") {
		return nil, fmt.Errorf("outbox: invalid server name %q", cfg.ServerName)
	}
	switch {
	case cfg.Window <= 0 && cfg.MaxWindow <= 0:
		cfg.Window, cfg.MaxWindow = DefaultWindow, DefaultMaxWindow
	case cfg.Window <= 0:
		cfg.Window = min(DefaultWindow, cfg.MaxWindow)
	case cfg.MaxWindow <= 0:
		cfg.MaxWindow = cfg.Window
	}
	cfg.MaxWindow = max(cfg.MaxWindow, cfg.Window)
	if cfg.MaxWindowBytes <= 0 {
		cfg.MaxWindowBytes = DefaultMaxWindowBytes
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = DefaultAckTimeout
	}
	if cfg.RetryMin <= 0 {
		cfg.RetryMin = DefaultRetryMin
	}
	if cfg.RetryMax < cfg.RetryMin {
		cfg.RetryMax = max(DefaultRetryMax, cfg.RetryMin)
	}
	if cfg.WatchdogAfter <= 0 {
		cfg.WatchdogAfter = 3 * cfg.AckTimeout
	}
	if cfg.DrainJitter < 0 {
		return nil, fmt.Errorf("outbox: negative drain jitter %v", cfg.DrainJitter)
	}
	if cfg.DeadLetterAfter < 0 {
		return nil, fmt.Errorf("outbox: negative dead_letter_after %d", cfg.DeadLetterAfter)
	}
	if cfg.DeadLetterAfter == 0 {
		cfg.DeadLetterAfter = DefaultDeadLetterAfter
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	server := cfg.ServerName
	if server == "" {
		server = "leafbox"
	}
	o := &Outbox{
		cfg:        cfg,
		stream:     stream,
		hub:        hub,
		log:        log.With("uplink", cfg.Name),
		inbox:      "_INBOX." + randomToken(inboxTokenChars) + ".", // short: every reply subject crosses the link twice
		idBase:     server + "." + cfg.Name + "." + newEpoch() + ".",
		legacyBase: server + "." + cfg.Name + ".",
		base:       stream.State().Msgs,
		newMsg:     make(chan struct{}, 1),
		ackSig:     make(chan struct{}, 1),
		done:       make(chan struct{}),

		refusedCount: map[uint64]int{},
		lookupCh:     make(chan lookupAnswer, 1),
	}
	if sy, ok := stream.(store.Syncer); ok && sy.SyncDeferred() {
		o.syncer = sy // Store only writes: a capture is durable at the next Sync
	}
	o.win = newWindow(cfg.Window, cfg.MaxWindow, cfg.MaxWindowBytes)
	o.rs.Set(StateIdle)
	if err := o.meter.load(cfg.StateFile); err != nil {
		return nil, err
	}
	o.sched = cfg.Scheduler
	if o.sched == nil {
		o.sched, _ = OpenScheduler(SchedulerConfig{}) // in memory: cannot fail
	}
	sl, err := o.sched.register(cfg.Name, cfg.Priority, cfg.MaxRate, cfg.DailyBudget)
	if err != nil {
		return nil, err
	}
	o.slot = sl
	o.durable.Store(stream.State().LastSeq) // recovered: on disk
	o.written.Store(o.durable.Load())
	o.openSeq = o.durable.Load()
	if cfg.DeadLetter != nil {
		o.deadBase = cfg.DeadLetter.State().Msgs
	}
	return o, nil
}

// dropOldest removes the backlog's oldest message to make room on a disk
// running low (Config.DiskLow). A message the forwarder has in flight may
// be the one: its PubAck then finds nothing to remove.
func (o *Outbox) dropOldest() {
	st := o.stream.State()
	if st.Msgs == 0 {
		return
	}
	o.diskLow.Add(1) // counted first, as acks are: Status never sees it unaccounted
	n, err := o.stream.Purge(store.PurgeOptions{Sequence: st.FirstSeq + 1})
	if n == 0 {
		o.diskLow.Add(^uint64(0)) // an ack or the age limit took it first
	}
	if err != nil {
		o.rs.SetError(fmt.Errorf("outbox: drop oldest on a low disk: %w", err))
	}
}

// raise sets v to seq unless it is already higher.
func raise(v *atomic.Uint64, seq uint64) {
	for cur := v.Load(); seq > cur && !v.CompareAndSwap(cur, seq); cur = v.Load() {
	}
}

// Sync makes every message captured so far durable, when the stream is a
// store.Syncer that defers its fsync,
// and lets the forwarder send them; it costs nothing when nothing was
// captured since the last Sync. The broker calls it before answering a
// publisher's PING; the forwarder calls it when it has caught up with the
// durable messages. Without that ability, Capture is durable already (or
// never, in memory) and Sync does nothing.
func (o *Outbox) Sync() error {
	if o.syncer == nil || o.written.Load() <= o.durable.Load() {
		return nil
	}
	o.syncMu.Lock()
	defer o.syncMu.Unlock()
	upto := o.written.Load() // every Store up to it returned
	if upto <= o.durable.Load() {
		return nil // a concurrent Sync covered it
	}
	if err := o.syncer.Sync(); err != nil {
		err = fmt.Errorf("outbox: sync: %w", err)
		o.rs.SetError(err)
		return err
	}
	raise(&o.durable, upto)
	runstate.Signal(o.newMsg)
	return nil
}

// HandleReply takes a message received on InboxPrefix()+">". It never
// blocks; the forwarder processes it.
func (o *Outbox) HandleReply(subject string, data []byte) {
	tail, ok := strings.CutPrefix(subject, o.inbox)
	if !ok {
		return
	}
	if idText, ok := strings.CutPrefix(tail, lookupToken); ok {
		if id, err := strconv.ParseUint(idText, 10, 64); err == nil {
			select {
			case o.lookupCh <- lookupAnswer{id: id, data: append([]byte(nil), data...)}:
			default: // a stale answer is pending; the forwarder drops it
			}
		}
		return
	}
	if body, ok := strings.CutSuffix(tail, batchSuffix); ok {
		// <batch id>.<flow>.<gap mode>.<batch seq>.<op>
		id, rest, _ := strings.Cut(body, ".")
		fields := strings.Split(rest, ".")
		if len(fields) != 4 {
			return
		}
		bseq, err := strconv.ParseUint(fields[2], 10, 64)
		if err != nil {
			return
		}
		o.ackMu.Lock()
		o.ackList = append(o.ackList, reply{batch: id, seq: bseq, data: append([]byte(nil), data...)})
		o.ackMu.Unlock()
		runstate.Signal(o.ackSig)
		return
	}
	roundText, seqText, ok := strings.Cut(tail, ".")
	if !ok {
		return
	}
	round, err1 := strconv.ParseUint(roundText, 10, 64)
	seq, err2 := strconv.ParseUint(seqText, 10, 64)
	if err1 != nil || err2 != nil {
		return
	}
	o.ackMu.Lock()
	o.ackList = append(o.ackList, reply{round: round, seq: seq, data: append([]byte(nil), data...)})
	o.ackMu.Unlock()
	runstate.Signal(o.ackSig)
}

// Start launches the forwarder; it returns at once. Cancelling ctx stops
// it as Close does, except that Close also waits.
func (o *Outbox) Start(ctx context.Context) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return ErrClosed
	}
	if o.started {
		return nil
	}
	o.started = true
	ctx, o.cancel = context.WithCancel(ctx)
	o.rs.Set(StateWaiting)
	go o.run(ctx)
	if o.cfg.MaxAge > 0 {
		o.ageDone = make(chan struct{})
		go o.ageLoop(ctx)
	}
	return nil
}

// Close stops the forwarder and waits for it. It does not close the
// stream. Calling it again does nothing.
func (o *Outbox) Close() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	started := o.started
	if o.cancel != nil {
		o.cancel()
	}
	o.rs.Close(StateClosed)
	o.mu.Unlock()
	if started {
		<-o.done
		if o.ageDone != nil {
			<-o.ageDone
		}
	}
	o.sched.unregister(o.slot)
	return o.meter.save(o.cfg.StateFile, true)
}

// Wait returns nil once cond holds for the outbox's Status, or ctx's
// error when ctx ends first. cond gets a fresh Status at once and after
// every change the outbox makes to what it reports: captures, publishes,
// acks, refusals, dead letters, requeues, expiry, and the forwarder's
// state and last error. The fields that move with time alone (OldestAge,
// the drain rate, ETA) and the scheduler's Waiting are read as they are
// at those moments; a condition on them alone is not woken. Each wake
// builds a Status, so a waiter costs the outbox's busy paths a little: it
// is for tests and for tools that wait on one outcome, not for a loop
// that watches every message.
func (o *Outbox) Wait(ctx context.Context, cond func(Status) bool) error {
	return o.rs.Wait(ctx, func() bool { return cond(o.Status()) })
}

// Status returns a snapshot of the counters.
func (o *Outbox) Status() Status {
	st := o.stream.State()
	acked := o.acked.Load()
	s := Status{
		Name:         o.cfg.Name,
		Captured:     o.captured.Load(),
		Stored:       o.stored.Load(),
		Forwarded:    o.forwarded.Load(),
		Acked:        acked,
		Retries:      o.retries.Load(),
		WrongStream:  o.wrongStream.Load(),
		InFlight:     int(o.inFlight.Load()),
		BacklogMsgs:  st.Msgs,
		BacklogBytes: st.Bytes,
		Dropped:      map[string]uint64{},
		Mode:         ModeBatch,
	}
	if !o.cfg.Batch || o.mode.perMessage.Load() {
		s.Mode = ModePerMessage
	}
	s.OldestAge = o.oldestAge(st)
	// What entered the stream and did not leave through an ack was
	// evicted by its limits. A Store that returned but is not counted
	// yet can make the difference negative for a moment.
	aged, low, dead := o.aged.Load(), o.diskLow.Load(), o.deadLettered.Load()
	if in, out := o.base+s.Stored+o.requeued.Load(), acked+st.Msgs+aged+low+dead; in > out {
		s.Dropped[DropLimits] = in - out
	}
	if dead > 0 {
		s.Dropped[DropRejectedByHub] = dead
	}
	s.Refusals, s.DeadLettered, s.Requeued = o.refusals.Load(), dead, o.requeued.Load()
	s.HubDuplicatesUnexpected = o.dupUnexpected.Load()
	s.Reordered = o.reordered.Load()
	if o.cfg.DeadLetter != nil {
		s.DeadLetterMsgs = o.cfg.DeadLetter.State().Msgs
		// What entered the dead-letter stream and did not leave through
		// a requeue was evicted by its limits.
		if in, out := o.deadBase+dead, o.requeued.Load()+s.DeadLetterMsgs; in > out {
			s.Dropped[DropDeadLetterLimits] = in - out
		}
	}
	if r := o.lastRefusal.Load(); r != nil {
		s.LastRejection, s.LastRejectionAt = r.text, r.at
	}
	if aged > 0 {
		s.Dropped[DropAge] = aged
	}
	if n := o.rejected.Load(); n > 0 {
		s.Dropped[DropRejected] = n
	}
	if n := o.storeErrors.Load(); n > 0 {
		s.Dropped[DropStoreError] = n
	}
	if n := o.storeFull.Load(); n > 0 {
		s.Dropped[DropStoreFull] = n
	}
	if low > 0 {
		s.Dropped[DropDiskLow] = low
	}
	s.State, s.LastError, s.LastErrorAt = o.rs.Snapshot()
	o.meterStatus(&s)
	return s
}
