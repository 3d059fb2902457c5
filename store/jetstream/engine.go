package jetstream

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/sublist"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/jsapi"
	"github.com/leafbox/leafbox/store/vfs"
)

// Errors returned by New, Start and Close.
var (
	// ErrClosed means the engine was closed.
	ErrClosed = errors.New("jetstream: engine closed")
	// ErrStarted means Start was called twice.
	ErrStarted = errors.New("jetstream: engine already started")
)

// Bus is the engine's in-process connection to the broker.
type Bus interface {
	// Subscribe calls h for each message on subject (wildcards ok); h runs
	// on the publisher's goroutine with borrowed, read-only slices (copy to
	// keep) and must not block for long.
	Subscribe(subject, queue string, h func(subject, reply, hdr, data []byte)) (unsubscribe func(), err error)
	// Publish routes a message by its subject and returns the number of
	// deliveries. hdr is a complete header block or nil.
	Publish(subject, reply string, hdr, data []byte) int
	// PublishAs routes by route but shows shown as the MSG subject, as
	// deliveries to a deliver_subject or pull inbox carry the stream
	// subject.
	PublishAs(route, shown, reply string, hdr, data []byte) int
	// HasInterest reports whether any subscription matches the literal
	// subject.
	HasInterest(subject string) bool
}

// Config configures an Engine. The zero value runs memory streams only,
// without limits.
type Config struct {
	// StoreDir holds file streams, one directory per stream named after
	// it (store/storedir's Layout.Streams in leafbox); empty refuses file
	// storage.
	StoreDir string
	// MaxMemory and MaxStore bound the bytes of memory and file streams;
	// 0 or negative is unlimited.
	MaxMemory, MaxStore int64
	// Domain is the JetStream domain; requests also arrive on
	// $JS.<Domain>.API.> and PubAcks carry it.
	Domain string
	// SyncInterval is how long file streams and consumer state may hold
	// acknowledged writes before fsync. Zero or negative means "always":
	// a publish is acked only once its message is durable (concurrent
	// publishes share one fsync).
	SyncInterval time.Duration
	// Encryption seals the file streams and consumer state (see
	// filestore.Encryption); a stream's S2 compression is then not
	// applied, sealed records do not compress.
	Encryption filestore.Encryption
	// Logger receives warnings and errors; nil discards them.
	Logger *slog.Logger
	// RefusePublish, when set, is asked before each message is stored;
	// true answers the publish with 503/10023 "insufficient resources"
	// and stores nothing. The app sets it to shed new work under memory
	// pressure.
	RefusePublish func() bool
	// BatchTimeout is how long an atomic batch may wait for its next
	// message before it is abandoned; 0 is nats-server's 10s.
	BatchTimeout time.Duration
	// ServerName names the server in API audit advisories.
	ServerName string
	// Account names the account the Bus is bound to in API audit
	// advisories; empty is the global account "$G".
	Account string
}

// Engine is a JetStream engine bound to one account's Bus. Create it with
// New, then Start it; Close stops it.
type Engine struct {
	cfg Config
	bus Bus
	log *slog.Logger
	// fs is where file streams live; tests swap in a crashable one.
	fs vfs.FS

	mu      sync.RWMutex
	streams map[string]*stream
	unsubs  []func()
	// captures indexes the subjects the streams capture (a stream's
	// entries live while its subject subscriptions do), for
	// CapturingStream. It has its own lock, taken after the others.
	captures sublist.Sublist[*stream]
	// failures are the streams and consumers restore skipped.
	failures []RestoreFailure
	// restores reserves the names of streams STREAM.RESTORE is building.
	restores map[string]bool
	started  bool
	closed   bool

	apiTotal  atomic.Uint64
	apiErrors atomic.Uint64

	// advisories counts the advisories published, by kind (advisory.go).
	advisories [numAdvisoryKinds]atomic.Uint64
	// audit holds the requests being served while API audits have a
	// listener; auditing is how many, so respond skips the lookup when
	// nobody listens.
	audit    audits
	auditing atomic.Int64
	// pushes indexes the push consumers by deliver subject for the Bus's
	// interest events (interest.go).
	pushes pushIndex
}

// New returns an engine that is not yet started.
func New(cfg Config, bus Bus) (*Engine, error) {
	if bus == nil {
		return nil, errors.New("jetstream: nil bus")
	}
	if cfg.MaxMemory < 0 {
		cfg.MaxMemory = 0
	}
	if cfg.MaxStore < 0 {
		cfg.MaxStore = 0
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	e := &Engine{cfg: cfg, bus: bus, log: log, fs: vfs.OS, streams: make(map[string]*stream)}
	_, e.pushes.watching = bus.(InterestWatcher)
	return e, nil
}

// Start restores file streams and their consumers from StoreDir, then
// subscribes to the API, ack and flow-control subjects and to every
// stream's subjects.
func (e *Engine) Start() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	if e.started {
		e.mu.Unlock()
		return ErrStarted
	}
	e.started = true
	if w, ok := e.bus.(InterestWatcher); ok {
		// Before any consumer exists, so none misses a change.
		e.unsubs = append(e.unsubs, w.WatchInterest(e.pushes.changed))
	}
	e.mu.Unlock()

	if err := e.restore(); err != nil {
		return err
	}
	subs := []struct {
		subject string
		h       func(subject, reply, hdr, data []byte)
	}{
		{jsapi.AllAPI, e.handleAPI},
		{ackPrefix + ">", e.handleAck},
		{fcPrefix + ">", e.handleFlowControl},
	}
	for _, src := range domainSources(e.cfg.Domain) {
		subs = append(subs, struct {
			subject string
			h       func(subject, reply, hdr, data []byte)
		}{src, e.handleDomainAPI})
	}
	for _, s := range subs {
		unsub, err := e.bus.Subscribe(s.subject, "", s.h)
		if err != nil {
			e.Close()
			return fmt.Errorf("jetstream: subscribe %s: %w", s.subject, err)
		}
		e.mu.Lock()
		e.unsubs = append(e.unsubs, unsub)
		e.mu.Unlock()
	}
	for _, s := range e.sortedStreams() {
		s.startSources()
	}
	return nil
}

// Close unsubscribes, stops every consumer and closes every stream,
// flushing durable state. It is idempotent.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	unsubs := e.unsubs
	e.unsubs = nil
	streams := make([]*stream, 0, len(e.streams))
	for _, s := range e.streams {
		streams = append(streams, s)
	}
	e.streams = map[string]*stream{}
	e.mu.Unlock()

	for _, u := range unsubs {
		u()
	}
	var errs []error
	for _, s := range streams {
		if err := s.close(false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// lookup returns the named stream or nil.
func (e *Engine) lookup(name string) *stream {
	e.mu.RLock()
	s := e.streams[name]
	e.mu.RUnlock()
	return s
}

// sortedStreams returns the streams ordered by name.
func (e *Engine) sortedStreams() []*stream {
	e.mu.RLock()
	out := make([]*stream, 0, len(e.streams))
	for _, s := range e.streams {
		out = append(out, s)
	}
	e.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Stats summarises the engine for monitoring.
type Stats struct {
	// Memory and Store are the bytes held by memory and file streams.
	Memory, Store uint64
	// ReservedMemory and ReservedStore sum max_bytes of the streams.
	ReservedMemory, ReservedStore uint64
	// MaxMemory and MaxStore are the configured limits (0: unlimited).
	MaxMemory, MaxStore int64
	// Streams, Consumers, Messages and Bytes count what is stored.
	Streams, Consumers int
	Messages, Bytes    uint64
	// APITotal and APIErrors count API requests and failed ones;
	// APILevel is the JetStream API level implemented.
	APITotal, APIErrors uint64
	APILevel            int
	// Domain is the configured domain.
	Domain string
	// Advisories counts the advisories published, per type.
	Advisories []AdvisoryCount
}

// Stats returns a snapshot of the engine's usage.
func (e *Engine) Stats() Stats {
	st := Stats{
		MaxMemory: e.cfg.MaxMemory, MaxStore: e.cfg.MaxStore, Domain: e.cfg.Domain,
		APITotal: e.apiTotal.Load(), APIErrors: e.apiErrors.Load(), APILevel: APILevel,
		Advisories: e.advisoryCounts(),
	}
	for _, s := range e.sortedStreams() {
		cfg, ss, nc := s.snapshot()
		st.Streams++
		st.Consumers += nc
		st.Messages += ss.Msgs
		st.Bytes += ss.Bytes
		var reserved uint64
		if cfg.MaxBytes > 0 {
			reserved = uint64(cfg.MaxBytes)
		}
		if cfg.Storage == jsapi.MemoryStorage {
			st.Memory += ss.Bytes
			st.ReservedMemory += reserved
		} else {
			st.Store += ss.Bytes
			st.ReservedStore += reserved
		}
	}
	return st
}

// StreamDetail is one stream for monitoring (/jsz).
type StreamDetail struct {
	Name      string
	Created   time.Time
	Config    jsapi.StreamConfig
	State     jsapi.StreamState
	Consumers []*jsapi.ConsumerInfo
}

// Streams returns every stream ordered by name, with consumer infos when
// withConsumers is set.
func (e *Engine) Streams(withConsumers bool) []StreamDetail {
	var out []StreamDetail
	for _, s := range e.sortedStreams() {
		info := s.info(false, "")
		d := StreamDetail{Name: s.name, Created: info.Created, Config: info.Config, State: info.State}
		if withConsumers {
			for _, c := range s.sortedConsumers() {
				if ci := c.info(); ci != nil {
					d.Consumers = append(d.Consumers, ci)
				}
			}
		}
		out = append(out, d)
	}
	return out
}

// CapturingStream returns the name of the stream that stores what is
// published on the literal subject subj, and whether one does. Stream
// subjects never overlap, so there is at most one. It reads an index kept
// as streams subscribe and unsubscribe, without building stream infos: a
// cached lookup takes no lock of the engine and allocates nothing.
func (e *Engine) CapturingStream(subj string) (string, bool) {
	r := e.captures.Match(subj)
	if len(r.Plain) == 0 {
		return "", false
	}
	return r.Plain[0].name, true
}

// usage returns the bytes stored by streams of the storage type.
func (e *Engine) usage(st jsapi.StorageType) uint64 {
	var n uint64
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, s := range e.streams {
		if s.storage == st {
			n += s.bytes.Load()
		}
	}
	return n
}

// limitExceeded reports whether storing size more bytes would exceed the
// engine's limit for the storage type.
func (e *Engine) limitExceeded(st jsapi.StorageType, size uint64) bool {
	limit := e.cfg.MaxStore
	if st == jsapi.MemoryStorage {
		limit = e.cfg.MaxMemory
	}
	if limit <= 0 {
		return false
	}
	return e.usage(st)+size > uint64(limit)
}

// IndexCacher is the optional ability of a stream's store to bound the
// memory its index keeps (filestore's SetIndexCache): n bytes, 0 for the
// store's default, below 0 for none.
type IndexCacher interface {
	SetIndexCache(n int64)
}

// SetIndexCaches sets the index cache of every stream whose store has
// one (IndexCacher), as the memory guardrails do under pressure; streams
// created later keep their store's default. It returns how many it set.
func (e *Engine) SetIndexCaches(n int64) int {
	set := 0
	for _, s := range e.sortedStreams() {
		s.mu.Lock()
		st := s.store
		s.mu.Unlock()
		if c, ok := st.(IndexCacher); ok {
			c.SetIndexCache(n)
			set++
		}
	}
	return set
}
