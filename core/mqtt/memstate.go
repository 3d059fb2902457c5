package mqtt

import (
	"slices"
	"sort"
	"sync"

	"github.com/leafbox/leafbox/core/subject"
)

// MemState is a State in memory: nothing survives the process. It serves
// tests and a listener configured without JetStream.
type MemState struct {
	mu       sync.Mutex
	sessions map[string]Session
	queues   map[string][]QueuedMsg
	seq      uint64
	incoming map[string]map[uint16]bool
	retained map[string]Msg
}

var _ State = (*MemState)(nil)

// NewMemState returns an empty MemState.
func NewMemState() *MemState {
	return &MemState{
		sessions: map[string]Session{},
		queues:   map[string][]QueuedMsg{},
		incoming: map[string]map[uint16]bool{},
		retained: map[string]Msg{},
	}
}

func cloneMsg(m Msg) Msg {
	m.Payload = slices.Clone(m.Payload)
	m.Header = slices.Clone(m.Header)
	return m
}

// LoadSessions implements State.
func (s *MemState) LoadSessions() ([]Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		ss.Subs = slices.Clone(ss.Subs)
		out = append(out, ss)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
	return out, nil
}

// PutSession implements State.
func (s *MemState) PutSession(ss Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss.Subs = slices.Clone(ss.Subs)
	s.sessions[ss.ClientID] = ss
	return nil
}

// DeleteSession implements State.
func (s *MemState) DeleteSession(clientID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, clientID)
	delete(s.queues, clientID)
	delete(s.incoming, clientID)
	return nil
}

// Enqueue implements State.
func (s *MemState) Enqueue(clientID string, m Msg) (uint64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	s.queues[clientID] = append(s.queues[clientID], QueuedMsg{Seq: s.seq, Msg: cloneMsg(m)})
	return s.seq, nil
}

// Queue implements State.
func (s *MemState) Queue(clientID string, afterSeq uint64, max int) ([]QueuedMsg, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []QueuedMsg
	for _, q := range s.queues[clientID] {
		if q.Seq > afterSeq {
			q.Msg = cloneMsg(q.Msg)
			out = append(out, q)
			if max > 0 && len(out) == max {
				break
			}
		}
	}
	return out, nil
}

func (s *MemState) find(clientID string, seq uint64) int {
	q := s.queues[clientID]
	i, ok := slices.BinarySearchFunc(q, seq, func(m QueuedMsg, seq uint64) int {
		switch {
		case m.Seq < seq:
			return -1
		case m.Seq > seq:
			return 1
		}
		return 0
	})
	if !ok {
		return -1
	}
	return i
}

// Release implements State.
func (s *MemState) Release(clientID string, seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.find(clientID, seq); i >= 0 {
		s.queues[clientID] = slices.Delete(s.queues[clientID], i, i+1)
	}
	return nil
}

// MarkPubrec implements State.
func (s *MemState) MarkPubrec(clientID string, seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.find(clientID, seq); i >= 0 {
		s.queues[clientID][i].Pubrec = true
	}
	return nil
}

// AddIncomingQoS2 implements State.
func (s *MemState) AddIncomingQoS2(clientID string, pid uint16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.incoming[clientID]
	if m == nil {
		m = map[uint16]bool{}
		s.incoming[clientID] = m
	}
	m[pid] = true
	return nil
}

// ReleaseIncomingQoS2 implements State.
func (s *MemState) ReleaseIncomingQoS2(clientID string, pid uint16) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.incoming[clientID], pid)
	return nil
}

// IncomingQoS2 implements State.
func (s *MemState) IncomingQoS2(clientID string) ([]uint16, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint16
	for pid := range s.incoming[clientID] {
		out = append(out, pid)
	}
	slices.Sort(out)
	return out, nil
}

// SetRetained implements State.
func (s *MemState) SetRetained(topic string, m Msg) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(m.Payload) == 0 {
		delete(s.retained, topic)
		return nil
	}
	s.retained[topic] = cloneMsg(m)
	return nil
}

// Retained implements State.
func (s *MemState) Retained(filter string) ([]Msg, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Msg
	for topic, m := range s.retained {
		if subject.MatchTopic(filter, topic) {
			out = append(out, cloneMsg(m))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out, nil
}
