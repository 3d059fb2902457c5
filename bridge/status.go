package bridge

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/changes"
)

// State is where a bridge is in its life.
type State int32

// The states of a bridge.
const (
	// StateStarting: Run has been called and the device side is not up
	// yet.
	StateStarting State = iota
	// StateConnected: the device side is up and messages flow.
	StateConnected
	// StateDisconnected: the device side failed; the Runner waits out
	// its backoff before the next Run.
	StateDisconnected
	// StateStopped: the bridge was stopped.
	StateStopped
)

func (s State) String() string {
	switch s {
	case StateStarting:
		return "starting"
	case StateConnected:
		return "connected"
	case StateDisconnected:
		return "disconnected"
	case StateStopped:
		return "stopped"
	}
	return "unknown"
}

// DropReason says why a message was not delivered.
type DropReason int

// The reasons a bridge drops a message; DropReasons lists them all.
const (
	// DropBadFrame: the device sent something that is not a valid frame
	// (also counted in BadFrames).
	DropBadFrame DropReason = iota
	// DropNotConnected: an outbound message arrived while the device side
	// was down and there was no stream to keep it.
	DropNotConnected
	// DropRejected: the broker or the device refused the message (an
	// invalid subject or topic, a permission, a Modbus exception).
	DropRejected
	// DropTooLarge: the message exceeds a size limit on the way.
	DropTooLarge
	// DropQueueFull: the bridge's bounded queue was full.
	DropQueueFull
	numDropReasons
)

// DropReasons lists every DropReason, in order, for reports that show
// zeros too.
var DropReasons = []DropReason{DropBadFrame, DropNotConnected, DropRejected, DropTooLarge, DropQueueFull}

func (r DropReason) String() string {
	switch r {
	case DropBadFrame:
		return "bad_frame"
	case DropNotConnected:
		return "not_connected"
	case DropRejected:
		return "rejected"
	case DropTooLarge:
		return "too_large"
	case DropQueueFull:
		return "queue_full"
	}
	return "unknown"
}

// Status is a bridge's live state and counters. A bridge updates it from
// any goroutine; Snapshot reads it and Wait awaits a condition on it. The
// zero value is ready to use.
//
// Reconnects follow from the state: entering StateConnected after an
// earlier connection counts one (SetState does it), so a bridge that
// reports its state never calls CountReconnect for the same event.
type Status struct {
	state      atomic.Int32
	in, out    atomic.Uint64
	badFrames  atomic.Uint64
	reconnects atomic.Uint64
	drops      [numDropReasons]atomic.Uint64
	changes    changes.Notifier

	mu            sync.Mutex
	since         time.Time // when state was entered
	connects      uint64    // times StateConnected was entered
	lastConnectAt time.Time // when it was last entered
	lastErr       string
	lastErrAt     time.Time
}

// SetState records that the bridge entered st now. Entering
// StateConnected from another state after an earlier connection counts a
// reconnect; setting the state it is already in only restarts since.
func (s *Status) SetState(st State) {
	now := time.Now()
	prev := State(s.state.Swap(int32(st)))
	s.mu.Lock()
	s.since = now
	if st == StateConnected && prev != StateConnected {
		if s.connects > 0 {
			s.reconnects.Add(1)
		}
		s.connects++
		s.lastConnectAt = now
	}
	s.mu.Unlock()
	s.changes.Notify()
}

// CountIn counts n messages from the device side into NATS.
func (s *Status) CountIn(n int) {
	s.in.Add(uint64(n))
	s.changes.Notify()
}

// CountOut counts n messages from NATS accepted by the device side.
func (s *Status) CountOut(n int) {
	s.out.Add(uint64(n))
	s.changes.Notify()
}

// CountBadFrame counts a frame the device sent that was not valid; it
// is also a DropBadFrame drop.
func (s *Status) CountBadFrame() {
	s.badFrames.Add(1)
	s.drops[DropBadFrame].Add(1)
	s.changes.Notify()
}

// CountReconnect counts one more connection of the device side after the
// first, for a bridge that reconnects without reporting it through
// SetState (SetState(StateConnected) counts reconnects itself).
func (s *Status) CountReconnect() {
	s.reconnects.Add(1)
	s.changes.Notify()
}

// CountDrop counts a message dropped for reason r.
func (s *Status) CountDrop(r DropReason) {
	if r >= 0 && r < numDropReasons {
		s.drops[r].Add(1)
		s.changes.Notify()
	}
}

// SetError records err as the last error, now; nil does nothing.
func (s *Status) SetError(err error) {
	if err == nil {
		return
	}
	s.mu.Lock()
	s.lastErr, s.lastErrAt = err.Error(), time.Now()
	s.mu.Unlock()
	s.changes.Notify()
}

// Wait returns nil once cond holds for a snapshot of s, checked at once
// and after every change of s, or ctx's error when ctx ends first. It
// never polls.
func (s *Status) Wait(ctx context.Context, cond func(Snapshot) bool) error {
	return s.changes.Wait(ctx, func() bool { return cond(s.Snapshot()) })
}

// connection returns how many times the bridge connected and when it last
// did.
func (s *Status) connection() (connects uint64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connects, s.lastConnectAt
}

// Snapshot is a copy of a Status at one moment.
type Snapshot struct {
	State      State
	Since      time.Time
	In, Out    uint64
	BadFrames  uint64
	Reconnects uint64
	// Drops has one count per DropReasons entry, in that order.
	Drops       []uint64
	LastError   string
	LastErrorAt time.Time
}

// Snapshot returns the current state and counters.
func (s *Status) Snapshot() Snapshot {
	snap := Snapshot{
		State:      State(s.state.Load()),
		In:         s.in.Load(),
		Out:        s.out.Load(),
		BadFrames:  s.badFrames.Load(),
		Reconnects: s.reconnects.Load(),
		Drops:      make([]uint64, len(DropReasons)),
	}
	for i, r := range DropReasons {
		snap.Drops[i] = s.drops[r].Load()
	}
	s.mu.Lock()
	snap.Since, snap.LastError, snap.LastErrorAt = s.since, s.lastErr, s.lastErrAt
	s.mu.Unlock()
	return snap
}
