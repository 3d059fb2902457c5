package mqttstate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/leafbox/leafbox/store"
)

// retainedSize is what a retained message counts against MaxRetainedBytes:
// topic, header and payload.
func retainedSize(m *Msg) int64 {
	return int64(len(m.Topic) + len(m.Header) + len(m.Payload))
}

// SetRetained sets the retained message of topic, replacing the old one;
// an empty payload clears it. m.Topic is set to topic. A new topic beyond
// MaxRetained gets ErrMaxRetained, and a message taking the retained bytes
// over MaxRetainedBytes ErrMaxRetainedBytes.
func (s *Store) SetRetained(topic string, m Msg) error {
	if err := ValidTopic(topic); err != nil {
		return err
	}
	if m.QoS > 2 {
		return fmt.Errorf("%w: %d", ErrInvalidQoS, m.QoS)
	}
	m.Topic = topic
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	old := s.retained[topic]
	if len(m.Payload) == 0 {
		if old == nil {
			return nil
		}
		return s.dropRetainedLocked(topic, old)
	}
	size := retainedSize(&m)
	if old == nil && s.opts.MaxRetained > 0 && len(s.retained) >= s.opts.MaxRetained {
		return fmt.Errorf("%w (%d)", ErrMaxRetained, s.opts.MaxRetained)
	}
	if lim := s.opts.MaxRetainedBytes; lim > 0 {
		total := s.rbytes + size
		if old != nil {
			total -= old.size
		}
		if total > lim {
			return fmt.Errorf("%w: %d bytes would take it to %d of %d", ErrMaxRetainedBytes, size, total, lim)
		}
	}
	token := allocToken(topic, s.rtokens)
	if old != nil {
		token = old.token
	}
	seq, _, err := s.rmsgs.Store(retPrefix+token, nil, appendMsg(nil, &m), 0)
	if err != nil {
		return fmt.Errorf("mqttstate: store retained: %w", err)
	}
	e := &retEntry{token: token, seq: seq, size: size}
	if !m.Expiry.IsZero() {
		e.expiry = m.Expiry.UnixNano()
	}
	if old != nil {
		s.rbytes -= old.size
	} else {
		s.rtrie.insert(topic)
	}
	s.retained[topic] = e
	s.rtokens[token] = topic
	s.rbytes += size
	return nil
}

// dropRetainedLocked removes a retained message; s.rmu is held.
func (s *Store) dropRetainedLocked(topic string, e *retEntry) error {
	if _, err := s.rmsgs.Remove(e.seq, false); err != nil && !errors.Is(err, store.ErrDeleted) {
		return fmt.Errorf("mqttstate: remove retained: %w", err)
	}
	delete(s.retained, topic)
	delete(s.rtokens, e.token)
	s.rtrie.remove(topic)
	s.rbytes -= e.size
	return nil
}

// Retained returns the unexpired retained messages whose topics match the
// MQTT filter, ordered by topic, each with Retain set. A filter starting
// with '#' or '+' never matches a topic starting with '$'.
func (s *Store) Retained(filter string) ([]Msg, error) {
	if err := ValidFilter(filter); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	now := time.Now().UnixNano()
	s.rmu.RLock()
	type hit struct {
		topic string
		seq   uint64
	}
	var hits []hit
	if strings.ContainsAny(filter, "+#") {
		s.rtrie.match(filter, func(topic string) {
			if e := s.retained[topic]; e.expiry == 0 || e.expiry > now {
				hits = append(hits, hit{topic, e.seq})
			}
		})
	} else if e := s.retained[filter]; e != nil && (e.expiry == 0 || e.expiry > now) {
		hits = append(hits, hit{filter, e.seq})
	}
	s.rmu.RUnlock()
	slices.SortFunc(hits, func(a, b hit) int { return strings.Compare(a.topic, b.topic) })

	out := make([]Msg, 0, len(hits))
	for _, h := range hits {
		sm, err := s.rmsgs.Load(h.seq, nil)
		if errors.Is(err, store.ErrDeleted) || errors.Is(err, store.ErrNotFound) {
			continue // replaced or cleared meanwhile
		}
		if err != nil {
			return out, fmt.Errorf("mqttstate: load retained %q: %w", h.topic, err)
		}
		m, err := decodeMsg(sm.Data)
		if err != nil {
			return out, fmt.Errorf("mqttstate: retained %q: %w", h.topic, err)
		}
		m.Retain = true
		out = append(out, m)
	}
	return out, nil
}
