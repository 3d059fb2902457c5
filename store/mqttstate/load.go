package mqttstate

import (
	"errors"
	"fmt"
	"time"

	"github.com/leafbox/leafbox/store"
)

// each calls fn for every message of st in sequence order.
func each(st store.Stream, fn func(sm *store.Msg) error) error {
	for seq := uint64(1); ; {
		sm, err := st.LoadNext(">", seq, nil)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(sm); err != nil {
			return err
		}
		seq = sm.Seq + 1
	}
}

// removeStale removes a record a crash left behind (an older version, or
// one whose session is gone).
func removeStale(st store.Stream, seq uint64) error {
	if _, err := st.Remove(seq, false); err != nil && !errors.Is(err, store.ErrDeleted) {
		return err
	}
	return nil
}

// load reads the streams into the index (see Open).
func (s *Store) load() error {
	now := time.Now()
	byToken := map[string]*session{}
	seqs := map[string]uint64{} // session token → record seq
	skip := func(kind string, sm *store.Msg, err error) {
		s.log.Warn("mqttstate: skipping record", "account", s.acct, "kind", kind, "seq", sm.Seq, "subject", sm.Subject, "err", err)
	}

	// Sessions: the newest record of each subject wins.
	err := each(s.sess, func(sm *store.Msg) error {
		tok, _, ok := splitTail(sm.Subject, sessPrefix, false)
		if !ok {
			skip("session", sm, fmt.Errorf("%w: subject", ErrCorrupt))
			return nil
		}
		data, err := decodeSession(sm.Data)
		if err != nil {
			skip("session", sm, err)
			return nil
		}
		if old, ok := seqs[tok]; ok {
			if err := removeStale(s.sess, old); err != nil {
				return err
			}
			if prev := byToken[tok]; prev != nil && prev.data.ClientID != data.ClientID {
				delete(s.sessions, prev.data.ClientID)
			}
		}
		seqs[tok] = sm.Seq
		ss := s.sessions[data.ClientID]
		if ss == nil || ss.token != tok {
			ss = newSession(tok)
		}
		ss.data = data
		byToken[tok] = ss
		s.sessions[data.ClientID] = ss
		s.tokens[tok] = data.ClientID
		return nil
	})
	if err != nil {
		return fmt.Errorf("mqttstate: load sessions: %w", err)
	}

	// Queued messages, in sequence order.
	err = each(s.msgs, func(sm *store.Msg) error {
		tok, _, _ := splitTail(sm.Subject, msgsPrefix, false)
		ss := byToken[tok]
		if ss == nil {
			return removeStale(s.msgs, sm.Seq)
		}
		m, pid, err := decodeQueued(sm.Data)
		if err != nil {
			skip("queued message", sm, err)
			return nil
		}
		e := qentry{seq: sm.Seq, pid: pid}
		if pid != 0 {
			e.deliveries = 1
		}
		if !m.Expiry.IsZero() {
			e.expiry = m.Expiry.UnixNano()
		}
		ss.queue = append(ss.queue, e)
		return nil
	})
	if err != nil {
		return fmt.Errorf("mqttstate: load queues: %w", err)
	}

	// Delivery state of queued messages.
	err = each(s.out, func(sm *store.Msg) error {
		tok, seq, _ := splitTail(sm.Subject, outPrefix, true)
		ss := byToken[tok]
		if ss == nil {
			return removeStale(s.out, sm.Seq)
		}
		i, ok := ss.find(seq)
		if !ok {
			return removeStale(s.out, sm.Seq)
		}
		pid, pubrec, n, err := decodeOut(sm.Data)
		if err != nil {
			skip("delivery state", sm, err)
			return nil
		}
		e := &ss.queue[i]
		if e.outSeq != 0 {
			if err := removeStale(s.out, e.outSeq); err != nil {
				return err
			}
		}
		e.outSeq, e.pid, e.pubrec, e.deliveries = sm.Seq, pid, pubrec, n
		return nil
	})
	if err != nil {
		return fmt.Errorf("mqttstate: load delivery state: %w", err)
	}

	// Incoming QoS 2 packet ids.
	err = each(s.qin, func(sm *store.Msg) error {
		tok, pid, _ := splitTail(sm.Subject, qinPrefix, true)
		ss := byToken[tok]
		if ss == nil || pid > 0xFFFF {
			return removeStale(s.qin, sm.Seq)
		}
		if old, ok := ss.qin[uint16(pid)]; ok {
			if err := removeStale(s.qin, old); err != nil {
				return err
			}
		}
		ss.qin[uint16(pid)] = sm.Seq
		return nil
	})
	if err != nil {
		return fmt.Errorf("mqttstate: load incoming QoS 2 state: %w", err)
	}

	// Retained messages.
	byRToken := map[string]string{}
	err = each(s.rmsgs, func(sm *store.Msg) error {
		tok, _, ok := splitTail(sm.Subject, retPrefix, false)
		if !ok {
			skip("retained", sm, fmt.Errorf("%w: subject", ErrCorrupt))
			return nil
		}
		m, err := decodeMsg(sm.Data)
		if err != nil {
			skip("retained", sm, err)
			return nil
		}
		if topic, ok := byRToken[tok]; ok {
			old := s.retained[topic]
			if err := s.dropRetainedLocked(topic, old); err != nil {
				return err
			}
		}
		if m.expired(now) || ValidTopic(m.Topic) != nil {
			return removeStale(s.rmsgs, sm.Seq)
		}
		if old := s.retained[m.Topic]; old != nil {
			if err := s.dropRetainedLocked(m.Topic, old); err != nil {
				return err
			}
		}
		e := &retEntry{token: tok, seq: sm.Seq, size: retainedSize(&m)}
		if !m.Expiry.IsZero() {
			e.expiry = m.Expiry.UnixNano()
		}
		byRToken[tok] = m.Topic
		s.retained[m.Topic] = e
		s.rtrie.insert(m.Topic)
		s.rtokens[tok] = m.Topic
		s.rbytes += e.size
		return nil
	})
	if err != nil {
		return fmt.Errorf("mqttstate: load retained: %w", err)
	}

	// Sessions that were connected when the process stopped count as
	// disconnected now; expired ones go.
	// (A connected session with expiry 0 ended with its connection.)
	for id, ss := range s.sessions {
		stamp := ss.data.DisconnectedAt.IsZero()
		if stamp {
			ss.data.DisconnectedAt = now
		}
		if ss.data.expired(now) {
			if err := s.deleteLocked(id, ss); err != nil {
				return err
			}
			continue
		}
		if stamp {
			if _, _, err := s.sess.Store(sessPrefix+ss.token, nil, encodeSession(&ss.data), 0); err != nil {
				return fmt.Errorf("mqttstate: stamp session: %w", err)
			}
		}
	}
	return nil
}
