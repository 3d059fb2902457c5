package modbus

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/bridge"
)

// DeviceStats are one device's counters, kept across reconnects.
type DeviceStats struct {
	polls, timeouts, exceptions, badFrames, writes atomic.Uint64
	missedPolls                                    atomic.Uint64 // grid slots skipped after an overrun
	lastPoll                                       atomic.Int64  // duration of the last full poll, ns
	failing                                        atomic.Bool   // the last request failed

	mu            sync.Mutex
	lastErr       string
	lastErrAt     time.Time
	lastException string
}

// DeviceSnapshot is a copy of a device's counters, named for metrics
// (modbus_device_timeouts_total{bridge,device} and so on).
type DeviceSnapshot struct {
	// Name and Unit identify the device.
	Name string
	Unit uint8
	// State is bridge.DeviceWaiting before the first complete poll or
	// failure, bridge.DeviceFailing while the last request failed, else
	// bridge.DeviceOK.
	State string
	// Polls counts complete polls (every read answered).
	Polls uint64
	// MissedPolls counts the slots of the device's poll grid that had no
	// poll: a poll (or a wait for the bus) that ran past the next slot
	// skips to the first slot after it ends, keeping the grid.
	MissedPolls uint64
	// Timeouts, Exceptions and BadFrames count failed requests: no
	// answer in time, a Modbus exception, a frame that failed its CRC or
	// shape.
	Timeouts, Exceptions, BadFrames uint64
	// Writes counts write requests the device accepted.
	Writes uint64
	// LastPoll is how long the last complete poll took.
	LastPoll time.Duration
	// LastError is the last failure with its time; LastException is the
	// last exception's name ("illegal data address").
	LastError     string
	LastErrorAt   time.Time
	LastException string
}

func (s *DeviceStats) setError(err error, exception string) {
	s.failing.Store(true)
	s.mu.Lock()
	s.lastErr, s.lastErrAt = err.Error(), time.Now()
	if exception != "" {
		s.lastException = exception
	}
	s.mu.Unlock()
}

func (s *DeviceStats) snapshot(name string, unit uint8) DeviceSnapshot {
	snap := DeviceSnapshot{
		Name: name, Unit: unit,
		Polls: s.polls.Load(), MissedPolls: s.missedPolls.Load(), Timeouts: s.timeouts.Load(), Exceptions: s.exceptions.Load(),
		BadFrames: s.badFrames.Load(), Writes: s.writes.Load(), LastPoll: time.Duration(s.lastPoll.Load()),
	}
	s.mu.Lock()
	snap.LastError, snap.LastErrorAt, snap.LastException = s.lastErr, s.lastErrAt, s.lastException
	s.mu.Unlock()
	switch {
	case s.failing.Load():
		snap.State = bridge.DeviceFailing
	case snap.Polls == 0 && snap.LastError == "":
		snap.State = bridge.DeviceWaiting
	default:
		snap.State = bridge.DeviceOK
	}
	return snap
}

// polled records a complete poll that took d.
func (s *DeviceStats) polled(d time.Duration) {
	s.polls.Add(1)
	s.lastPoll.Store(int64(d))
	s.failing.Store(false)
}
