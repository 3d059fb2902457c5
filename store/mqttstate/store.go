package mqttstate

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/leafbox/leafbox/store"
)

// Store is one account's MQTT state. It is safe for concurrent use.
type Store struct {
	opts Options
	log  *slog.Logger
	acct string

	// The streams, one per record kind (doc.go).
	sess, msgs, out, qin, rmsgs store.Stream

	// mu guards the session index and closed; each session has its own
	// lock, taken after mu. Operations on one session hold mu shared, so
	// that DeleteSession, Sweep and adding a session (which hold it
	// exclusively) never race a write of that session.
	mu       sync.RWMutex
	closed   bool
	sessions map[string]*session // by client id
	tokens   map[string]string   // client token → client id
	// dirty are tokens whose DeleteSession failed after removing the
	// session record: records may be left under them.
	dirty map[string]bool

	// rmu guards the retained index; taken after mu when both are.
	rmu      sync.RWMutex
	retained map[string]*retEntry // by topic
	rtrie    topicTrie            // the topics of retained
	rtokens  map[string]string    // topic token → topic
	rbytes   int64

	stop chan struct{}
	done chan struct{}
}

// session is a stored session with its queue and incoming QoS 2 state.
type session struct {
	token string

	// mu guards the rest.
	mu      sync.Mutex
	data    Session
	msgSubj string
	queue   []qentry          // by seq, ascending
	qin     map[uint16]uint64 // incoming QoS 2 packet id → record seq
}

// qentry is one queued message's index entry.
type qentry struct {
	seq, outSeq uint64
	expiry      int64 // Unix ns, 0 none
	deliveries  int32
	pid         uint16
	pubrec      bool
}

// retEntry is one retained message's index entry.
type retEntry struct {
	token  string
	seq    uint64
	expiry int64
	size   int64
}

// Stream kinds, the last element of the stream names.
var kinds = [...]string{"sess", "msgs", "out", "qos2in", "rmsgs"}

// StreamNames returns the names of the streams Open uses for an account.
func StreamNames(account string) []string {
	acc := accountToken(account)
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = "mqtt." + acc + "." + k
	}
	return names
}

// Open opens, creating them when absent, the account's streams in
// opts.Backend and loads its state: sessions that expired while the
// process was down are deleted, sessions that were connected get
// DisconnectedAt = now, expired retained messages are removed, and records
// that a crash left behind (an older version of a record, a queued message
// or QoS 2 state of a deleted session) are removed. Records that do not
// decode are logged and skipped.
func Open(opts Options) (*Store, error) {
	if opts.Backend == nil {
		return nil, errors.New("mqttstate: Options.Backend is nil")
	}
	if opts.MaxSessions < 0 || opts.MaxQueued < 0 || opts.MaxRetained < 0 || opts.MaxRetainedBytes < 0 {
		return nil, errors.New("mqttstate: negative limit")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Store{
		opts: opts, log: log, acct: accountToken(opts.Account),
		sessions: map[string]*session{}, tokens: map[string]string{}, dirty: map[string]bool{},
		retained: map[string]*retEntry{}, rtokens: map[string]string{},
	}
	names := StreamNames(opts.Account)
	streams := []*store.Stream{&s.sess, &s.msgs, &s.out, &s.qin, &s.rmsgs}
	for i, name := range names {
		cfg := store.Config{MaxMsgsPerSubject: 1}
		if kinds[i] == "msgs" {
			cfg.MaxMsgsPerSubject = 0
		}
		st, err := opts.Backend.OpenInternalStream(name, cfg)
		if err != nil {
			s.closeStreams()
			return nil, fmt.Errorf("mqttstate: open %s: %w", name, err)
		}
		*streams[i] = st
	}
	if err := s.load(); err != nil {
		s.closeStreams()
		return nil, err
	}
	interval := opts.SweepInterval
	if interval == 0 {
		interval = time.Minute
	}
	if interval > 0 {
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go s.sweeper(interval)
	}
	return s, nil
}

// closeStreams closes the streams opened so far.
func (s *Store) closeStreams() error {
	var errs []error
	for _, st := range []store.Stream{s.sess, s.msgs, s.out, s.qin, s.rmsgs} {
		if st != nil {
			if err := st.Close(); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Close stops the sweep and closes the streams. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.stop != nil {
		close(s.stop)
		<-s.done
	}
	// Wait for writers of retained messages, which hold only rmu.
	s.rmu.Lock()
	defer s.rmu.Unlock()
	return s.closeStreams()
}

// sweeper runs Sweep every interval until Close.
func (s *Store) sweeper(interval time.Duration) {
	defer close(s.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if _, err := s.Sweep(); err != nil && !errors.Is(err, ErrClosed) {
				s.log.Warn("mqttstate: sweep", "account", s.acct, "err", err)
			}
		}
	}
}

// SweepResult counts what a Sweep removed.
type SweepResult struct {
	Sessions, Retained, Queued int
}

// Sweep deletes expired sessions (with their queues), expired retained
// messages, and expired queued messages that have no packet id yet.
func (s *Store) Sweep() (SweepResult, error) {
	var res SweepResult
	now := time.Now()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return res, ErrClosed
	}
	var errs []error
	for id, ss := range s.sessions {
		ss.mu.Lock()
		expired := ss.data.expired(now)
		ss.mu.Unlock()
		if expired {
			if err := s.deleteLocked(id, ss); err != nil {
				errs = append(errs, err)
				continue
			}
			res.Sessions++
		}
	}
	s.mu.Unlock()

	s.mu.RLock()
	for _, ss := range s.sessions {
		ss.mu.Lock()
		n, err := s.dropExpiredLocked(ss, now.UnixNano())
		ss.mu.Unlock()
		res.Queued += n
		if err != nil {
			errs = append(errs, err)
		}
	}
	s.mu.RUnlock()

	s.rmu.Lock()
	for topic, e := range s.retained {
		if e.expiry != 0 && e.expiry <= now.UnixNano() {
			if err := s.dropRetainedLocked(topic, e); err != nil {
				errs = append(errs, err)
				continue
			}
			res.Retained++
		}
	}
	s.rmu.Unlock()
	return res, errors.Join(errs...)
}

// Stats counts what the Store holds.
type Stats struct {
	Sessions, Queued, Retained int
	RetainedBytes              int64
}

// Stats returns the current counts.
func (s *Store) Stats() Stats {
	var st Stats
	s.mu.RLock()
	st.Sessions = len(s.sessions)
	for _, ss := range s.sessions {
		ss.mu.Lock()
		st.Queued += len(ss.queue)
		ss.mu.Unlock()
	}
	s.mu.RUnlock()
	s.rmu.RLock()
	st.Retained, st.RetainedBytes = len(s.retained), s.rbytes
	s.rmu.RUnlock()
	return st
}
