package mqttstate

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/store"
)

// Enqueue appends a message to the client's queue and returns its
// sequence. A queue holding MaxQueued messages gets ErrQueueFull.
func (s *Store) Enqueue(clientID string, m Msg) (uint64, error) {
	return s.enqueue(clientID, m, 0)
}

// EnqueueSent is Enqueue then AssignPacketID(seq, pid) in one write, for a
// message sent at once to a connected client: it saves the QoS 1/2 path
// one fsync. pid 0 is Enqueue.
func (s *Store) EnqueueSent(clientID string, m Msg, pid uint16) (uint64, error) {
	return s.enqueue(clientID, m, pid)
}

// enqueue stores a queued message with its packet id (0 for none).
func (s *Store) enqueue(clientID string, m Msg, pid uint16) (uint64, error) {
	if m.QoS > 2 {
		return 0, fmt.Errorf("%w: %d", ErrInvalidQoS, m.QoS)
	}
	ss, err := s.lookup(clientID)
	if err != nil {
		return 0, err
	}
	defer s.mu.RUnlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s.opts.MaxQueued > 0 && len(ss.queue) >= s.opts.MaxQueued {
		return 0, fmt.Errorf("%w: %q holds %d messages", ErrQueueFull, clientID, len(ss.queue))
	}
	seq, _, err := s.msgs.Store(ss.msgSubj, nil, appendQueued(nil, &m, pid), 0)
	if err != nil {
		return 0, fmt.Errorf("mqttstate: enqueue: %w", err)
	}
	e := qentry{seq: seq, pid: pid}
	if pid != 0 {
		e.deliveries = 1
	}
	if !m.Expiry.IsZero() {
		e.expiry = m.Expiry.UnixNano()
	}
	ss.queue = append(ss.queue, e)
	return seq, nil
}

// find returns the index of seq in the queue and whether it is there.
func (ss *session) find(seq uint64) (int, bool) {
	return slices.BinarySearchFunc(ss.queue, seq, func(e qentry, seq uint64) int {
		switch {
		case e.seq < seq:
			return -1
		case e.seq > seq:
			return 1
		}
		return 0
	})
}

// Queue returns up to max (all when max ≤ 0) of the client's queued
// messages with a sequence above afterSeq, in order, with their delivery
// state. Expired messages that have no packet id are left out.
func (s *Store) Queue(clientID string, afterSeq uint64, max int) ([]QueuedMsg, error) {
	ss, err := s.lookup(clientID)
	if err != nil {
		return nil, err
	}
	defer s.mu.RUnlock()
	now := time.Now().UnixNano()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	i, _ := ss.find(afterSeq + 1)
	var out []QueuedMsg
	var sm store.Msg
	for ; i < len(ss.queue) && (max <= 0 || len(out) < max); i++ {
		e := ss.queue[i]
		if e.pid == 0 && e.expiry != 0 && e.expiry <= now {
			continue
		}
		if _, err := s.msgs.Load(e.seq, &sm); err != nil {
			return out, fmt.Errorf("mqttstate: load queued message %d: %w", e.seq, err)
		}
		m, err := decodeMsg(sm.Data)
		if err != nil {
			return out, fmt.Errorf("mqttstate: queued message %d: %w", e.seq, err)
		}
		sm = store.Msg{} // the loaded slices now belong to m
		out = append(out, QueuedMsg{Seq: e.seq, Msg: m, PacketID: e.pid, Pubrec: e.pubrec, Deliveries: int(e.deliveries)})
	}
	return out, nil
}

// update changes a queued message's delivery state and stores it: one
// small record per message (subject $MQTT.out.<client>.<seq>, the older
// record of the subject evicted), never the whole session.
func (s *Store) update(clientID string, seq uint64, change func(*qentry)) error {
	ss, err := s.lookup(clientID)
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	i, ok := ss.find(seq)
	if !ok {
		return fmt.Errorf("%w: %q seq %d", ErrUnknownMessage, clientID, seq)
	}
	e := ss.queue[i]
	change(&e)
	var buf [16]byte
	subj := outPrefix + ss.token + "." + strconv.FormatUint(seq, 10)
	outSeq, _, err := s.out.Store(subj, nil, appendOut(buf[:0], e.pid, e.pubrec, e.deliveries), 0)
	if err != nil {
		return fmt.Errorf("mqttstate: store delivery state: %w", err)
	}
	e.outSeq = outSeq
	ss.queue[i] = e
	return nil
}

// AssignPacketID records the packet id the message is sent with and
// counts a delivery: call it for each send, the first and each resend
// with DUP (the packet id then stays).
func (s *Store) AssignPacketID(clientID string, seq uint64, pid uint16) error {
	return s.update(clientID, seq, func(e *qentry) {
		e.pid = pid
		if e.deliveries < 1<<31-1 {
			e.deliveries++
		}
	})
}

// MarkPubrec records that the client sent PUBREC for the QoS 2 message:
// a PUBREL is owed, and on reconnect the PUBREL is resent, not the
// PUBLISH.
func (s *Store) MarkPubrec(clientID string, seq uint64) error {
	return s.update(clientID, seq, func(e *qentry) { e.pubrec = true })
}

// Release removes the message from the client's queue (PUBACK or PUBCOMP
// received; or a QoS 0 message sent).
func (s *Store) Release(clientID string, seq uint64) error {
	ss, err := s.lookup(clientID)
	if err != nil {
		return err
	}
	defer s.mu.RUnlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	i, ok := ss.find(seq)
	if !ok {
		return fmt.Errorf("%w: %q seq %d", ErrUnknownMessage, clientID, seq)
	}
	if err := s.releaseLocked(ss, i); err != nil {
		return err
	}
	return nil
}

// releaseLocked removes queue entry i and its records; ss.mu is held.
// The message goes first: a crash before its delivery state goes leaves a
// state record without a message, which Open removes.
func (s *Store) releaseLocked(ss *session, i int) error {
	e := ss.queue[i]
	if _, err := s.msgs.Remove(e.seq, false); err != nil && !errors.Is(err, store.ErrDeleted) {
		return fmt.Errorf("mqttstate: release %d: %w", e.seq, err)
	}
	ss.queue = slices.Delete(ss.queue, i, i+1)
	if e.outSeq != 0 {
		if _, err := s.out.Remove(e.outSeq, false); err != nil && !errors.Is(err, store.ErrDeleted) {
			return fmt.Errorf("mqttstate: release %d: delivery state: %w", e.seq, err)
		}
	}
	return nil
}

// dropExpiredLocked releases the expired messages without a packet id;
// ss.mu is held.
func (s *Store) dropExpiredLocked(ss *session, now int64) (int, error) {
	n := 0
	for i := 0; i < len(ss.queue); {
		e := ss.queue[i]
		if e.pid == 0 && e.expiry != 0 && e.expiry <= now {
			if err := s.releaseLocked(ss, i); err != nil {
				return n, err
			}
			n++
			continue
		}
		i++
	}
	return n, nil
}
