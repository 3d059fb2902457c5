package mqttstate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/leafbox/leafbox/store"
)

// validClientID reports why id cannot name a session.
func validClientID(id string) error {
	switch {
	case len(id) > maxTopic:
		return fmt.Errorf("%w: %d bytes", ErrInvalidClientID, len(id))
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: not UTF-8", ErrInvalidClientID)
	}
	return nil
}

// cloneSession returns a deep copy of s.
func cloneSession(s Session) Session {
	s.Subs = slices.Clone(s.Subs)
	return s
}

// PutSession stores the session, replacing the one with its client id
// (its queue and QoS 2 state stay). A new session beyond MaxSessions gets
// ErrMaxSessions. Replacing a session blocks only that session; adding one
// blocks the Store for one write.
func (s *Store) PutSession(sess Session) error {
	if err := validClientID(sess.ClientID); err != nil {
		return err
	}
	rec := encodeSession(&sess)
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return ErrClosed
	}
	if ss := s.sessions[sess.ClientID]; ss != nil {
		defer s.mu.RUnlock()
		return s.putLocked(ss, sess, rec)
	}
	s.mu.RUnlock()

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if ss := s.sessions[sess.ClientID]; ss != nil {
		return s.putLocked(ss, sess, rec) // added meanwhile
	}
	if s.opts.MaxSessions > 0 && len(s.sessions) >= s.opts.MaxSessions {
		return fmt.Errorf("%w (%d)", ErrMaxSessions, s.opts.MaxSessions)
	}
	ss := newSession(allocToken(sess.ClientID, s.tokens))
	if s.dirty[ss.token] {
		if err := s.purgeLeftovers(ss.token); err != nil {
			return err
		}
	}
	if err := s.putLocked(ss, sess, rec); err != nil {
		return err
	}
	s.sessions[sess.ClientID] = ss
	s.tokens[ss.token] = sess.ClientID
	return nil
}

// putLocked writes the session record and updates ss; s.mu is held.
func (s *Store) putLocked(ss *session, sess Session, rec []byte) error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, _, err := s.sess.Store(sessPrefix+ss.token, nil, rec, 0); err != nil {
		return fmt.Errorf("mqttstate: store session: %w", err)
	}
	ss.data = cloneSession(sess)
	return nil
}

// newSession returns an empty session index entry.
func newSession(token string) *session {
	return &session{token: token, msgSubj: msgsPrefix + token, qin: map[uint16]uint64{}}
}

// LoadSessions returns the stored sessions that have not expired, ordered
// by client id.
func (s *Store) LoadSessions() ([]Session, error) {
	now := time.Now()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	out := make([]Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		ss.mu.Lock()
		if !ss.data.expired(now) {
			out = append(out, cloneSession(ss.data))
		}
		ss.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Session) int { return strings.Compare(a.ClientID, b.ClientID) })
	return out, nil
}

// DeleteSession deletes the session with its queue, delivery state and
// incoming QoS 2 state. Deleting an unknown session does nothing.
func (s *Store) DeleteSession(clientID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	ss := s.sessions[clientID]
	if ss == nil {
		return nil
	}
	return s.deleteLocked(clientID, ss)
}

// deleteLocked deletes a session; s.mu is held exclusively. The session
// record goes first: should a crash interrupt the rest, Open removes the
// records left without a session.
func (s *Store) deleteLocked(id string, ss *session) error {
	tok := ss.token
	purges := []struct {
		st   store.Stream
		subj string
	}{
		{s.sess, sessPrefix + tok},
		{s.msgs, msgsPrefix + tok},
		{s.out, outPrefix + tok + ".*"},
		{s.qin, qinPrefix + tok + ".*"},
	}
	for i, p := range purges {
		if _, err := p.st.Purge(store.PurgeOptions{Subject: p.subj}); err != nil {
			if i > 0 {
				// The session is gone; what is left is removed at Open,
				// or before a new session takes the token.
				s.forget(id, ss)
				s.dirty[tok] = true
			}
			return fmt.Errorf("mqttstate: delete session: %w", err)
		}
	}
	s.forget(id, ss)
	return nil
}

// purgeLeftovers removes what a failed DeleteSession left under token
// before a new session takes it; s.mu is held exclusively.
func (s *Store) purgeLeftovers(tok string) error {
	for _, p := range []struct {
		st   store.Stream
		subj string
	}{
		{s.msgs, msgsPrefix + tok},
		{s.out, outPrefix + tok + ".*"},
		{s.qin, qinPrefix + tok + ".*"},
	} {
		if _, err := p.st.Purge(store.PurgeOptions{Subject: p.subj}); err != nil {
			return fmt.Errorf("mqttstate: remove a deleted session's records: %w", err)
		}
	}
	delete(s.dirty, tok)
	return nil
}

// forget drops a session from the index.
func (s *Store) forget(id string, ss *session) {
	delete(s.sessions, id)
	delete(s.tokens, ss.token)
	ss.mu.Lock()
	ss.queue, ss.qin = nil, map[uint16]uint64{}
	ss.mu.Unlock()
}

// lookup returns the session of clientID with s.mu held shared; the
// caller runs s.mu.RUnlock when err is nil.
func (s *Store) lookup(clientID string) (*session, error) {
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, ErrClosed
	}
	ss := s.sessions[clientID]
	if ss == nil {
		s.mu.RUnlock()
		return nil, fmt.Errorf("%w: %q", ErrUnknownSession, clientID)
	}
	return ss, nil
}

// AddIncomingQoS2 records that a QoS 2 PUBLISH with packet id pid arrived
// from the client and was PUBRECed: a repeat of it must not be delivered
// again until ReleaseIncomingQoS2.
func (s *Store) AddIncomingQoS2(clientID string, pid uint16) error {
	ss, err := s.lookup(clientID)
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, ok := ss.qin[pid]; ok {
		return nil
	}
	seq, _, err := s.qin.Store(fmt.Sprintf("%s%s.%d", qinPrefix, ss.token, pid), nil, nil, 0)
	if err != nil {
		return fmt.Errorf("mqttstate: store incoming QoS 2 state: %w", err)
	}
	ss.qin[pid] = seq
	return nil
}

// ReleaseIncomingQoS2 forgets an incoming QoS 2 packet id (PUBREL
// received). An unknown one is no error.
func (s *Store) ReleaseIncomingQoS2(clientID string, pid uint16) error {
	ss, err := s.lookup(clientID)
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	seq, ok := ss.qin[pid]
	if !ok {
		return nil
	}
	if _, err := s.qin.Remove(seq, false); err != nil && !errors.Is(err, store.ErrDeleted) {
		return fmt.Errorf("mqttstate: remove incoming QoS 2 state: %w", err)
	}
	delete(ss.qin, pid)
	return nil
}

// IncomingQoS2 returns the client's incoming QoS 2 packet ids awaiting
// PUBREL, ascending.
func (s *Store) IncomingQoS2(clientID string) ([]uint16, error) {
	ss, err := s.lookup(clientID)
	if err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	out := make([]uint16, 0, len(ss.qin))
	for pid := range ss.qin {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out, nil
}
