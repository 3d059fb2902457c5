package jetstream

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// stream is one JetStream stream: its configuration, its message store,
// its consumers and its publish-side state (dedupe window, last msg id).
type stream struct {
	eng     *Engine
	name    string
	storage jsapi.StorageType
	dir     string // "" for memory streams
	created time.Time

	// bytes mirrors the store's byte count for account limits.
	bytes atomic.Uint64
	// policy mirrors cfg.Retention for readers without s.mu.
	policy atomic.Uint32
	// subjects names the published subjects, so that a repeated one
	// costs the publish path no allocation.
	subjects subject.Names

	// mu serialises writes: publishes, purges, removals, config updates.
	mu        sync.Mutex
	cfg       jsapi.StreamConfig
	store     store.Stream
	unsubs    []func()
	dedupe    dedupeWindow
	lastMsgID string
	// firstSeq is the first sequence as last observed; when the store
	// moves it on its own (limits, max_age) consumers are resynced.
	firstSeq uint64
	closed   bool
	// commit sends PubAcks after fsync in sync-always mode; nil otherwise.
	commit *committer
	// batches are the atomic batches being staged, by id (batch.go).
	batches map[string]*atomicBatch
	// xf holds the compiled subject_transform and republish (transform.go).
	xf streamTransforms
	// removing holds, by name, the consumers unregistered whose state
	// is still being deleted (closed once it is): a consumer created
	// under the same name waits for it, so the old one's removal never
	// deletes the new one's directory.
	removing map[string]chan struct{}

	// consMu guards consumers; taken after mu when both are needed.
	consMu    sync.RWMutex
	consumers map[string]*consumer
	// consSnap is an immutable copy of the consumers for the publish
	// path, replaced whenever the map changes.
	consSnap atomic.Pointer[[]*consumer]

	// srcs runs the mirror or sources (source.go).
	srcs sourceSet
	// sched holds the message schedules (schedule.go); guarded by mu.
	sched schedules
	// cfgSnap is cfg as last set, read by config without s.mu: the
	// engine reads configs under e.mu, which the store path (s.mu, then
	// e.mu for the account usage) takes after s.mu.
	cfgSnap atomic.Pointer[jsapi.StreamConfig]
}

// setConsumer adds (c != nil) or removes the named consumer and refreshes
// the snapshot. It returns the consumer previously registered.
func (s *stream) setConsumer(name string, c *consumer) *consumer {
	s.consMu.Lock()
	defer s.consMu.Unlock()
	old := s.consumers[name]
	if c != nil {
		s.consumers[name] = c
	} else {
		delete(s.consumers, name)
	}
	snap := make([]*consumer, 0, len(s.consumers))
	for _, c := range s.consumers {
		snap = append(snap, c)
	}
	s.consSnap.Store(&snap)
	return old
}

// newStream opens the store for cfg and registers nothing yet; the caller
// adds it to the engine and calls subscribe.
func (e *Engine) newStream(cfg jsapi.StreamConfig, created time.Time, restoring bool) (*stream, error) {
	s := &stream{
		eng:       e,
		name:      cfg.Name,
		storage:   cfg.Storage,
		created:   created,
		cfg:       cfg,
		consumers: make(map[string]*consumer),
	}
	s.dedupe.window = cfg.DuplicateWindow
	s.policy.Store(uint32(cfg.Retention))
	s.cfgSnap.Store(&cfg)
	if err := s.xf.set(&cfg); err != nil {
		return nil, err
	}
	if cfg.Storage == jsapi.FileStorage {
		if e.cfg.StoreDir == "" {
			return nil, errors.New("jetstream: file storage is not configured")
		}
		s.dir = filepath.Join(e.cfg.StoreDir, cfg.Name)
		if !restoring {
			if err := e.writeMeta(s.dir, streamMeta{Config: cfg, Created: created}); err != nil {
				return nil, err
			}
		}
	}
	st, err := e.openStreamStore(&cfg, s.dir)
	if err != nil {
		return nil, err
	}
	s.store = st
	if sy, ok := st.(store.Syncer); ok && sy.SyncDeferred() && cfg.Storage == jsapi.FileStorage && e.cfg.SyncInterval <= 0 && cfg.PersistMode != jsapi.AsyncPersist {
		s.commit = newCommitter(sy, e.bus, cfg.Name)
	}
	ss := st.State()
	s.firstSeq = ss.FirstSeq
	s.bytes.Store(ss.Bytes)
	if cfg.FirstSeq > 1 && ss.LastSeq == 0 && !restoring {
		// The store numbers from 1; a first_seq is reached by purging up
		// to it, which moves an empty store's next sequence.
		if _, err := st.Purge(store.PurgeOptions{Sequence: cfg.FirstSeq}); err != nil {
			if s.commit != nil {
				s.commit.close()
			}
			st.Close()
			return nil, err
		}
	}
	if restoring {
		s.dropTornBatch()
		s.restoreDedupe()
	}
	if cfg.AllowMsgSchedules {
		s.restoreSchedulesLocked()
	}
	return s, nil
}

// subscribe captures the stream's subjects and adds them to the engine's
// capture index (CapturingStream).
func (s *stream) subscribe(subjects []string) error {
	var unsubs []func()
	for _, subj := range subjects {
		u, err := s.eng.bus.Subscribe(subj, "", s.handlePublish)
		if err != nil {
			for _, u := range unsubs {
				u()
			}
			return fmt.Errorf("jetstream: subscribe %q: %w", subj, err)
		}
		if err := s.eng.captures.Insert(subj, "", s); err != nil {
			u()
			for _, u := range unsubs {
				u()
			}
			return fmt.Errorf("jetstream: index %q: %w", subj, err)
		}
		unsubs = append(unsubs, func() {
			u()
			_ = s.eng.captures.Remove(subj, "", s)
		})
	}
	s.mu.Lock()
	s.unsubs = append(s.unsubs, unsubs...)
	s.mu.Unlock()
	return nil
}

// unsubscribe removes the stream's subject subscriptions.
func (s *stream) unsubscribe() {
	s.mu.Lock()
	unsubs := s.unsubs
	s.unsubs = nil
	s.mu.Unlock()
	for _, u := range unsubs {
		u()
	}
}

// snapshot returns the config, store state and consumer count.
func (s *stream) snapshot() (jsapi.StreamConfig, store.State, int) {
	s.mu.Lock()
	cfg := s.cfg
	st := s.store.State()
	s.mu.Unlock()
	s.consMu.RLock()
	n := len(s.consumers)
	s.consMu.RUnlock()
	return cfg, st, n
}

// config returns a copy of the configuration.
func (s *stream) config() jsapi.StreamConfig {
	return *s.cfgSnap.Load()
}

// info builds the stream info; subjectsFilter fills state.subjects.
func (s *stream) info(deletedDetails bool, subjectsFilter string) *jsapi.StreamInfo {
	s.mu.Lock()
	cfg := s.cfg
	st := s.store.State()
	var subjects map[string]uint64
	if subjectsFilter != "" {
		subjects = s.store.SubjectsState(subjectsFilter)
	}
	var deleted []uint64
	if deletedDetails && st.NumDeleted > 0 {
		deleted = s.deletedSeqs(st)
	}
	s.mu.Unlock()
	s.consMu.RLock()
	nc := len(s.consumers)
	s.consMu.RUnlock()

	info := &jsapi.StreamInfo{
		Config:    cfg,
		Created:   s.created,
		State:     stateInfo(st),
		Domain:    s.eng.cfg.Domain,
		TimeStamp: time.Now().UTC(),
	}
	info.State.Consumers = nc
	info.State.Subjects = subjects
	info.State.Deleted = deleted
	info.Mirror, info.Sources = s.sourceInfos()
	return info
}

// stateInfo converts a store state to its wire form.
func stateInfo(st store.State) jsapi.StreamState {
	ws := jsapi.StreamState{
		Msgs:        st.Msgs,
		Bytes:       st.Bytes,
		FirstSeq:    st.FirstSeq,
		LastSeq:     st.LastSeq,
		NumSubjects: st.NumSubjects,
		NumDeleted:  st.NumDeleted,
	}
	if !st.FirstTime.IsZero() {
		ws.FirstTime = st.FirstTime.UTC()
	}
	if !st.LastTime.IsZero() {
		ws.LastTime = st.LastTime.UTC()
	}
	return ws
}

// deletedSeqs lists interior deleted sequences. Caller holds s.mu.
func (s *stream) deletedSeqs(st store.State) []uint64 {
	var out []uint64
	var sm store.Msg
	for seq := st.FirstSeq; seq <= st.LastSeq && len(out) < st.NumDeleted; seq++ {
		if _, err := s.store.Load(seq, &sm); errors.Is(err, store.ErrDeleted) || errors.Is(err, store.ErrNotFound) {
			out = append(out, seq)
		}
	}
	return out
}

// sortedConsumers returns the consumers ordered by name.
func (s *stream) sortedConsumers() []*consumer {
	s.consMu.RLock()
	out := make([]*consumer, 0, len(s.consumers))
	for _, c := range s.consumers {
		out = append(out, c)
	}
	s.consMu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// lookupConsumer returns the named consumer or nil.
func (s *stream) lookupConsumer(name string) *consumer {
	s.consMu.RLock()
	c := s.consumers[name]
	s.consMu.RUnlock()
	return c
}

// consumerList returns the consumers in no particular order. The slice is
// shared: do not modify it.
func (s *stream) consumerList() []*consumer {
	if p := s.consSnap.Load(); p != nil {
		return *p
	}
	return nil
}

// update applies a validated new configuration.
func (s *stream) update(ncfg jsapi.StreamConfig) error {
	s.mu.Lock()
	old := s.cfg
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	var xf streamTransforms
	if err := xf.set(&ncfg); err != nil {
		s.mu.Unlock()
		return err
	}
	if err := s.store.UpdateConfig(ncfg.StoreConfig()); err != nil {
		s.mu.Unlock()
		return err
	}
	if s.dir != "" {
		if err := s.eng.writeMeta(s.dir, streamMeta{Config: ncfg, Created: s.created}); err != nil {
			// Roll the store back to the old limits; the file still
			// holds the old config.
			_ = s.store.UpdateConfig(old.StoreConfig())
			s.mu.Unlock()
			return err
		}
	}
	s.cfg = ncfg
	s.cfgSnap.Store(&ncfg)
	s.xf.in, s.xf.rp, s.xf.headersOnly = xf.in, xf.rp, xf.headersOnly
	s.dedupe.window = ncfg.DuplicateWindow
	s.policy.Store(uint32(ncfg.Retention))
	if ncfg.AllowMsgSchedules && !old.AllowMsgSchedules {
		s.restoreSchedulesLocked()
	}
	s.mu.Unlock()

	if !equalStrings(old.Subjects, ncfg.Subjects) {
		s.unsubscribe()
		if err := s.subscribe(ncfg.Subjects); err != nil {
			return err
		}
	}
	// Limits may have evicted messages consumers had not yet seen.
	s.mu.Lock()
	s.resyncConsumersLocked(true)
	s.mu.Unlock()
	return nil
}

// close stops the consumers and closes (or, with remove, deletes) the
// store.
func (s *stream) close(remove bool) error {
	s.stopSources()
	s.unsubscribe()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.stopSchedulesLocked()
	s.dropBatchesLocked()
	s.mu.Unlock()

	s.consMu.Lock()
	cons := s.consumers
	s.consumers = map[string]*consumer{}
	s.consSnap.Store(nil)
	s.consMu.Unlock()
	var errs []error
	for _, c := range cons {
		if err := c.stop(remove, remove); err != nil {
			errs = append(errs, err)
		}
		if remove {
			s.eng.adviseConsumer(s.name, c.name, jsapi.ActionDeleted)
		}
	}
	if s.commit != nil {
		s.commit.close()
	}
	if remove {
		errs = append(errs, s.store.Delete())
		if s.dir != "" {
			errs = append(errs, s.eng.removeAll(s.dir))
		}
	} else {
		errs = append(errs, s.store.Close())
	}
	return errors.Join(errs...)
}

// resyncConsumersLocked brings every consumer's pending count in line with
// the store after messages vanished without the engine removing them
// (limits, max_age, purge, TTL). full recomputes every consumer; otherwise
// only consumers that fell behind the first sequence are touched. Caller
// holds s.mu.
func (s *stream) resyncConsumersLocked(full bool) {
	st := s.store.State()
	s.bytes.Store(st.Bytes)
	first := st.FirstSeq
	if !full && first == s.firstSeq {
		return
	}
	s.firstSeq = first
	for _, c := range s.consumerList() {
		c.resync(first, full)
	}
}

// overlaps reports whether any of the stream's subjects overlaps any of
// subjects.
func overlaps(a, b []string) bool {
	for _, x := range a {
		for _, y := range b {
			if subject.Overlap(x, y) {
				return true
			}
		}
	}
	return false
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
