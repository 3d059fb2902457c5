package jetstream

import (
	"crypto/rand"
	"errors"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

const (
	// stateFlushInterval bounds how long a durable consumer's state may
	// lag in its ConsumerStore: acks within it may be redelivered after a
	// crash.
	stateFlushInterval = 200 * time.Millisecond
	// deliverBatch bounds the messages one pump step decides under the
	// consumer lock before publishing them.
	deliverBatch = 128
)

// consumer is one consumer of a stream. Its pump goroutine (pump.go) does
// all delivery; API, ack and publish handlers change state under mu and
// signal the pump.
type consumer struct {
	s       *stream
	eng     *Engine
	name    string
	created time.Time
	dir     string // "" when the state is not persisted
	// advSubjects are the per-message advisory subjects (advisory.go).
	advSubjects advisorySubjects

	signal chan struct{}
	quit   chan struct{}
	done   chan struct{}

	mu      sync.Mutex
	cfg     jsapi.ConsumerConfig
	filters []string
	closed  bool
	cstore  store.ConsumerStore

	// Delivery position. sseq is the next stream sequence to look at,
	// dseq the next consumer sequence; streamLast is the last stream
	// sequence the stream has announced (stored), which bounds reads so
	// numPending stays exact.
	sseq, dseq uint64
	streamLast uint64
	numPending uint64
	// lastPerSubject holds the sequences still to deliver for
	// deliver_policy last_per_subject, in order.
	lastPerSubject []uint64

	// Ack state.
	ackFloorStream, ackFloorConsumer uint64
	pending                          map[uint64]*pendingMsg
	redelivered                      map[uint64]uint64 // stream seq → deliveries - 1
	redeliverQueue                   []uint64
	ackCheckAt                       int64 // earliest pending deadline (Unix ns), 0 none
	lastDelivered, lastAcked         time.Time

	// dropped lists the deliveries given up without an ack (max_deliver,
	// message gone) since the pump last took them for their advisories.
	dropped []dropped
	// pauseEnd marks a pause whose end the pump is still to advise.
	pauseEnd bool

	// Pull requests waiting for messages (pull.go).
	waiting []*pullRequest
	// Priority group pin (priority.go): the pinned client's ID, when it
	// was pinned and when the pin runs out without a request from it;
	// pinEvents are the pin changes still to advise.
	pinID      string
	pinnedAt   time.Time
	pinExpires time.Time
	pinEvents  []pinEvent

	// Push state (push.go).
	active          bool
	inactiveSince   time.Time
	interestBackoff time.Duration
	heartbeatAt     time.Time
	fcReply         string
	fcBytes         int
	pendingBytes    int
	maxPendingBytes int
	lastActivity    time.Time
	stateDirty      bool
	stateGen        uint64     // numbers state snapshots, guarded by mu
	stateWriteMu    sync.Mutex // orders writes of snapshots
	stateWritten    uint64     // the newest snapshot written, guarded by stateWriteMu
	stateFlushedAt  time.Time
	// pace is the replay original and rate limit state (pacing.go).
	pace pacing
}

// pendingMsg is a delivered, unacknowledged message.
type pendingMsg struct {
	// cseq is the consumer sequence of the first delivery.
	cseq uint64
	// ts is when it was last delivered (Unix ns).
	ts int64
	// deadline is when it is redelivered unless acked (Unix ns).
	deadline int64
	// queued marks it as on the redelivery queue.
	queued bool
}

// newName returns a random 8-character consumer name.
func newName() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b [8]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b[:])
}

// filterMatch reports whether subj passes the filters (nil: all).
func filterMatch(filters []string, subj string) bool {
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if subject.Match(f, subj) {
			return true
		}
	}
	return false
}

// consumerFilters returns the effective filters of cfg, dropping ">".
func consumerFilters(cfg *jsapi.ConsumerConfig) []string {
	fs := cfg.Filters()
	if len(fs) == 1 && (fs[0] == ">" || fs[0] == "") {
		return nil
	}
	return append([]string(nil), fs...)
}

// createConsumer creates the consumer cfg describes, or returns or
// updates an existing one according to action, and reports whether the
// consumer is new. cfg is already normalized and has its Name set.
func (s *stream) createConsumer(cfg jsapi.ConsumerConfig, action jsapi.ConsumerAction) (*consumer, bool, *jsapi.APIError) {
	name := cfg.Name
	if name == "" {
		name = cfg.Durable
	}
	if name == "" {
		name = newName()
		cfg.Name = name
	}
	s.mu.Lock()
	for done := s.removing[name]; done != nil; done = s.removing[name] {
		s.mu.Unlock()
		<-done // a deleted consumer of this name: its state goes first
		s.mu.Lock()
	}
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, jsapi.NewStreamNotFoundError()
	}
	scfg := &s.cfg
	filters := consumerFilters(&cfg)

	if existing := s.lookupConsumer(name); existing != nil {
		ecfg := existing.config()
		if action == jsapi.ActionCreate && !jsapi.SameConsumerConfig(&cfg, &ecfg) {
			return nil, false, jsapi.NewConsumerAlreadyExistsError()
		}
		if scfg.Retention == jsapi.WorkQueuePolicy {
			if err := s.checkWorkQueue(name, filters, true); err != nil {
				return nil, false, err
			}
		}
		if err := existing.updateConfig(&cfg); err != nil {
			return nil, false, err
		}
		return existing, false, nil
	}
	if action == jsapi.ActionUpdate {
		return nil, false, jsapi.NewConsumerDoesNotExistError()
	}
	if scfg.MaxConsumers > 0 && s.numConsumers() >= scfg.MaxConsumers {
		return nil, false, jsapi.NewMaximumConsumersLimitError()
	}
	if scfg.Retention == jsapi.WorkQueuePolicy {
		if err := s.checkWorkQueue(name, filters, false); err != nil {
			return nil, false, err
		}
	}

	c := s.newConsumer(cfg, time.Now().UTC())
	c.filters = filters
	c.startPosition()
	if err := c.openStore(false); err != nil {
		return nil, false, jsapi.NewConsumerStoreFailedError(err)
	}
	s.setConsumer(name, c)
	c.start()
	return c, true, nil
}

// newConsumer builds a consumer that is not yet registered or started.
func (s *stream) newConsumer(cfg jsapi.ConsumerConfig, created time.Time) *consumer {
	name := cfg.Name
	if name == "" {
		name = cfg.Durable
	}
	c := &consumer{
		s:               s,
		eng:             s.eng,
		name:            name,
		created:         created,
		cfg:             cfg,
		signal:          make(chan struct{}, 1),
		quit:            make(chan struct{}),
		done:            make(chan struct{}),
		dseq:            1,
		pending:         make(map[uint64]*pendingMsg),
		redelivered:     make(map[uint64]uint64),
		maxPendingBytes: flowControlMaxPending / 16,
		lastActivity:    time.Now(),
		advSubjects:     newAdvisorySubjects(s.name, name),
		pauseEnd:        cfg.PauseUntil != nil && time.Now().Before(*cfg.PauseUntil),
		pace:            newPacing(s.cfg.MaxMsgSize),
	}
	if s.dir != "" && !cfg.MemoryStorage {
		c.dir = filepath.Join(s.dir, "obs", name)
	}
	return c
}

// numConsumers counts the stream's consumers.
func (s *stream) numConsumers() int {
	s.consMu.RLock()
	defer s.consMu.RUnlock()
	return len(s.consumers)
}

// checkWorkQueue applies the workqueue partition rule to a consumer with
// filters; updating an existing consumer checks only overlaps.
func (s *stream) checkWorkQueue(name string, filters []string, updating bool) *jsapi.APIError {
	others := make(map[string][]string)
	for _, o := range s.consumerList() {
		if o.name != name {
			others[o.name] = o.filterList()
		}
	}
	if updating && len(filters) == 0 {
		if len(others) > 0 {
			return jsapi.NewConsumerWQConsumerNotUniqueError()
		}
		return nil
	}
	return jsapi.CheckWorkQueueFilters(name, filters, others)
}

// filterList returns the consumer's filters.
func (c *consumer) filterList() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.filters
}

// config returns a copy of the configuration.
func (c *consumer) config() jsapi.ConsumerConfig {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cfg
}

// startPosition sets the starting sequence and pending count from the
// deliver policy. Caller holds s.mu, so no message is stored meanwhile.
func (c *consumer) startPosition() {
	st := c.s.store.State()
	c.streamLast = st.LastSeq
	cfg := &c.cfg
	start := st.FirstSeq
	switch cfg.DeliverPolicy {
	case jsapi.DeliverLast:
		start = st.LastSeq + 1
		if m, err := c.loadLast(); err == nil {
			start = m.Seq
		}
	case jsapi.DeliverNew:
		start = st.LastSeq + 1
	case jsapi.DeliverByStartSequence:
		start = max(cfg.OptStartSeq, st.FirstSeq)
	case jsapi.DeliverByStartTime:
		if cfg.OptStartTime != nil {
			start = c.s.seqFromTime(cfg.OptStartTime.UnixNano())
		}
	case jsapi.DeliverLastPerSubject:
		c.lastPerSubject = c.lastSeqsPerSubject()
		start = st.LastSeq + 1
	}
	if start == 0 {
		start = 1
	}
	c.sseq = start
	c.ackFloorStream = start - 1
	c.numPending = c.countPending()
}

// loadLast returns the newest message matching the filters.
func (c *consumer) loadLast() (*store.Msg, error) {
	if len(c.filters) == 0 {
		return c.s.store.LoadLast("", nil)
	}
	var best *store.Msg
	for _, f := range c.filters {
		if m, err := c.s.store.LoadLast(f, nil); err == nil && (best == nil || m.Seq > best.Seq) {
			best = m
		}
	}
	if best == nil {
		return nil, store.ErrNotFound
	}
	return best, nil
}

// lastSeqsPerSubject returns, in order, the last sequence of every subject
// matching the filters.
func (c *consumer) lastSeqsPerSubject() []uint64 {
	filters := c.filters
	if len(filters) == 0 {
		filters = []string{">"}
	}
	seen := make(map[string]struct{})
	var seqs []uint64
	for _, f := range filters {
		for subj := range c.s.store.SubjectsState(f) {
			if _, dup := seen[subj]; dup {
				continue
			}
			seen[subj] = struct{}{}
			if fs := c.s.store.FilteredState(subj, 0); fs.Last != 0 {
				seqs = append(seqs, fs.Last)
			}
		}
	}
	sort.Slice(seqs, func(i, j int) bool { return seqs[i] < seqs[j] })
	return seqs
}

// countPending counts the matching messages from sseq to streamLast plus
// the last-per-subject sequences still queued.
func (c *consumer) countPending() uint64 {
	n := uint64(len(c.lastPerSubject))
	if c.sseq > c.streamLast {
		return n
	}
	if len(c.filters) == 0 {
		return n + c.s.store.FilteredState("", c.sseq).Msgs
	}
	for _, f := range c.filters {
		n += c.s.store.FilteredState(f, c.sseq).Msgs
	}
	return n
}

// stored is called by the stream, under s.mu, after it stored seq on
// subj. It reports whether the consumer's filters match the message.
func (c *consumer) stored(seq uint64, subj string) bool {
	c.mu.Lock()
	if seq <= c.streamLast {
		c.mu.Unlock()
		return filterMatch(c.filters, subj)
	}
	c.streamLast = seq
	match := filterMatch(c.filters, subj)
	if match && seq >= c.sseq {
		c.numPending++
	}
	c.mu.Unlock()
	if match {
		c.kick()
	}
	return match
}

// evicted is called by the stream, under s.mu, before it stores a message
// that will evict seq (the oldest on subj) by the per-subject limit.
func (c *consumer) evicted(seq uint64, subj string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if seq >= c.sseq && seq <= c.streamLast && c.numPending > 0 && filterMatch(c.filters, subj) {
		c.numPending--
	}
	if c.pending[seq] != nil {
		c.noteGone(seq, termReasonDeleted)
		c.kick()
	}
}

// removed ends the pending delivery of seq, if any, after its message was
// deleted.
func (c *consumer) removed(seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending[seq] != nil {
		c.noteGone(seq, termReasonDeleted)
		c.kick()
	}
}

// resync recomputes the pending count after messages vanished: always
// when full, else only when the consumer had fallen behind first.
// Pending deliveries of messages below first end, with a terminated
// advisory when a limit removed them (not full); full resyncs follow
// purges, rollups and updates, which end them silently. Caller holds s.mu.
func (c *consumer) resync(first uint64, full bool) {
	c.mu.Lock()
	// Deliveries of messages that are gone can never be acked.
	if c.ackFloorStream+1 < first {
		for seq := range c.pending {
			if seq >= first {
				continue
			}
			if full {
				c.dropPending(seq) // a purge, or limits lowered
			} else {
				c.noteGone(seq, termReasonDeleted)
			}
		}
		if len(c.pending) == 0 {
			c.ackFloorStream = max(c.ackFloorStream, first-1)
		}
	}
	if c.sseq < first {
		c.sseq = first
	} else if !full {
		gone := len(c.dropped) > 0
		c.mu.Unlock()
		if gone {
			c.kick()
		}
		return
	}
	c.streamLast = max(c.streamLast, c.s.store.State().LastSeq)
	if len(c.lastPerSubject) > 0 {
		kept := c.lastPerSubject[:0]
		var sm store.Msg
		for _, seq := range c.lastPerSubject {
			if _, err := c.s.store.Load(seq, &sm); err == nil {
				kept = append(kept, seq)
			}
		}
		c.lastPerSubject = kept
	}
	c.numPending = c.countPending()
	c.mu.Unlock()
	c.kick()
}

// kick wakes the pump.
func (c *consumer) kick() {
	select {
	case c.signal <- struct{}{}:
	default:
	}
}

// updateConfig applies the mutable fields of ncfg.
func (c *consumer) updateConfig(ncfg *jsapi.ConsumerConfig) *jsapi.APIError {
	c.mu.Lock()
	defer c.mu.Unlock()
	bound := c.cfg.DeliverSubject != "" && c.pushInterest()
	if err := jsapi.CheckConsumerUpdate(&c.cfg, ncfg, bound); err != nil {
		return err
	}
	nfilters := consumerFilters(ncfg)
	refilter := !equalStrings(nfilters, c.filters)
	ncfg.PauseUntil = c.cfg.PauseUntil
	if ncfg.PriorityPolicy != jsapi.PriorityPinnedClient || !equalStrings(ncfg.PriorityGroups, c.cfg.PriorityGroups) {
		c.unassignPin()
	}
	c.unwatchPush()
	c.cfg = *ncfg
	c.watchPush()
	c.filters = nfilters
	if refilter {
		c.numPending = c.countPending()
	}
	c.stateDirty = true
	if c.dir != "" {
		if err := c.eng.writeMeta(c.dir, consumerMeta{Stream: c.s.name, Name: c.name, Config: c.cfg, Created: c.created}); err != nil {
			return jsapi.NewConsumerStoreFailedError(err)
		}
	}
	c.kick()
	return nil
}

// info returns the consumer's info, or nil once it is closed.
func (c *consumer) info() *jsapi.ConsumerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	return c.infoLocked(time.Now())
}

// infoLocked builds the info. Caller holds c.mu.
func (c *consumer) infoLocked(now time.Time) *jsapi.ConsumerInfo {
	cfg := c.cfg
	info := &jsapi.ConsumerInfo{
		Stream:  c.s.name,
		Name:    c.name,
		Created: c.created,
		Config:  &cfg,
		Delivered: jsapi.SequenceInfo{
			Consumer: c.dseq - 1,
			Stream:   c.sseq - 1,
		},
		AckFloor: jsapi.SequenceInfo{
			Consumer: c.ackFloorConsumer,
			Stream:   c.ackFloorStream,
		},
		NumAckPending:  len(c.pending),
		NumRedelivered: len(c.redelivered),
		NumWaiting:     len(c.waiting),
		NumPending:     c.numPending,
		TimeStamp:      now.UTC(),
		PriorityGroups: c.priorityInfo(),
	}
	if !c.lastDelivered.IsZero() {
		t := c.lastDelivered.UTC()
		info.Delivered.Last = &t
	}
	if !c.lastAcked.IsZero() {
		t := c.lastAcked.UTC()
		info.AckFloor.Last = &t
	}
	if cfg.DeliverSubject != "" {
		// Asked now, not cached: a client that went away must not leave
		// the consumer looking bound.
		info.PushBound = c.pushInterest()
	}
	if cfg.PauseUntil != nil && now.Before(*cfg.PauseUntil) {
		info.Paused = true
		info.PauseRemaining = cfg.PauseUntil.Sub(now)
	}
	return info
}

// start launches the pump, after registering a push consumer for the
// interest events of its deliver subject.
func (c *consumer) start() {
	c.mu.Lock()
	c.watchPush()
	c.mu.Unlock()
	go c.pump()
}

// stop ends the pump, answers waiting pull requests with 409 Consumer
// Deleted when deleting, and closes or deletes the state store.
func (c *consumer) stop(deleted, removeState bool) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.unwatchPush()
	waiting := c.waiting
	c.waiting = nil
	cs := c.cstore
	var snap *store.ConsumerState
	if cs != nil && !removeState {
		snap = c.snapshotLocked()
	}
	c.mu.Unlock()
	close(c.quit)
	<-c.done

	if deleted {
		hdr := statusHeader(409, jsapi.StatusConsumerDeleted)
		for _, wr := range waiting {
			c.eng.bus.Publish(wr.reply, "", hdr, nil)
		}
	}
	if cs == nil {
		return nil
	}
	if removeState {
		err := cs.Delete()
		if c.dir != "" {
			err = errors.Join(err, c.eng.removeAll(c.dir))
		}
		return err
	}
	return errors.Join(cs.Update(snap), cs.Close())
}

// deleteConsumer removes the named consumer from the stream and stops it.
func (s *stream) deleteConsumer(name string) bool {
	c := s.lookupConsumer(name)
	if c == nil {
		return false
	}
	return s.removeConsumer(c)
}

// removeConsumer unregisters c (if it still is registered), stops it and
// deletes its state.
func (s *stream) removeConsumer(c *consumer) bool {
	if !s.unregister(c) {
		return false
	}
	s.finishRemoval(c)
	return true
}

// unregister takes c out of the stream's consumers if it is still the one
// registered under its name.
func (s *stream) unregister(c *consumer) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.consMu.RLock()
	registered := s.consumers[c.name] == c
	s.consMu.RUnlock()
	if registered {
		s.setConsumer(c.name, nil)
		if s.removing == nil {
			s.removing = map[string]chan struct{}{}
		}
		s.removing[c.name] = make(chan struct{})
	}
	return registered
}

// finishRemoval stops an unregistered consumer and deletes its state,
// then lets a consumer created under its name go on; interest streams
// then drop what only it was holding.
func (s *stream) finishRemoval(c *consumer) {
	err := c.stop(true, true)
	s.mu.Lock()
	if done := s.removing[c.name]; done != nil {
		close(done)
		delete(s.removing, c.name)
	}
	s.mu.Unlock()
	if err != nil {
		s.eng.log.Warn("jetstream: consumer delete", "stream", s.name, "consumer", c.name, "err", err)
	}
	s.eng.adviseConsumer(s.name, c.name, jsapi.ActionDeleted)
	if s.retention() == jsapi.InterestPolicy {
		s.dropUninterested()
	}
}

// snapshotLocked copies the state for the ConsumerStore. Caller holds
// c.mu.
// flushStateNow writes the consumer's current state to its store before
// returning (for a double-ack).
func (c *consumer) flushStateNow() {
	c.mu.Lock()
	if c.cstore == nil {
		c.mu.Unlock()
		return
	}
	st := c.snapshotLocked()
	c.stateGen++
	gen := c.stateGen
	c.stateDirty = false
	c.stateFlushedAt = time.Now()
	c.mu.Unlock()
	c.writeState(st, gen)
}

// writeState records snapshot gen unless a newer one was written already,
// so concurrent flushes never move the stored state backwards.
func (c *consumer) writeState(st *store.ConsumerState, gen uint64) {
	c.stateWriteMu.Lock()
	defer c.stateWriteMu.Unlock()
	if gen <= c.stateWritten {
		return
	}
	if err := c.cstore.Update(st); err != nil {
		c.eng.log.Warn("jetstream: consumer state", "stream", c.s.name, "consumer", c.name, "err", err)
		return
	}
	c.stateWritten = gen
}

func (c *consumer) snapshotLocked() *store.ConsumerState {
	st := &store.ConsumerState{
		Delivered: store.SequencePair{Consumer: c.dseq - 1, Stream: c.sseq - 1},
		AckFloor:  store.SequencePair{Consumer: c.ackFloorConsumer, Stream: c.ackFloorStream},
	}
	if len(c.pending) > 0 {
		st.Pending = make(map[uint64]store.Pending, len(c.pending))
		for seq, p := range c.pending {
			st.Pending[seq] = store.Pending{Sequence: p.cseq, Timestamp: p.ts}
		}
	}
	if len(c.redelivered) > 0 {
		st.Redelivered = make(map[uint64]uint64, len(c.redelivered))
		for seq, n := range c.redelivered {
			st.Redelivered[seq] = n
		}
	}
	return st
}

// openStore opens the state store (file streams) and, when restoring,
// loads the saved state.
func (c *consumer) openStore(restoring bool) error {
	if c.dir == "" {
		return nil
	}
	if !restoring {
		if err := c.eng.writeMeta(c.dir, consumerMeta{Stream: c.s.name, Name: c.name, Config: c.cfg, Created: c.created}); err != nil {
			return err
		}
	}
	cs, err := c.eng.openConsumerStore(c.dir)
	if err != nil {
		return err
	}
	c.cstore = cs
	if !restoring {
		return cs.Update(c.snapshotLocked())
	}
	return nil
}

// restoreState applies a saved state. Caller holds s.mu.
func (c *consumer) restoreState(st *store.ConsumerState) {
	ss := c.s.store.State()
	c.streamLast = ss.LastSeq
	c.sseq = max(st.Delivered.Stream+1, 1)
	c.dseq = st.Delivered.Consumer + 1
	c.ackFloorStream = st.AckFloor.Stream
	c.ackFloorConsumer = st.AckFloor.Consumer
	if c.sseq < ss.FirstSeq {
		c.sseq = ss.FirstSeq
	}
	for seq, p := range st.Pending {
		c.pending[seq] = &pendingMsg{cseq: p.Sequence, ts: p.Timestamp, deadline: p.Timestamp + int64(c.ackWait(st.Redelivered[seq]+1))}
		c.noteDeadline(c.pending[seq].deadline)
	}
	for seq, n := range st.Redelivered {
		c.redelivered[seq] = n
	}
	c.numPending = c.countPending()
}
