package outbox

import (
	"context"
	"math"
	mathrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/leaf/internal/runstate"
	"github.com/leafbox/leafbox/store/vfs"
)

// rateTau is the time constant of the drain-rate moving average.
const rateTau = 3 * time.Second

// meter is the forwarder's bookkeeping beside the counters: the drain
// rate, the stuck-backlog watchdog and the last hub sequence per stream.
type meter struct {
	ackedBytes   atomic.Uint64
	ackedPayload atomic.Uint64 // payload bytes of the acknowledged messages
	lastProgress atomic.Int64  // unix nanoseconds of the last publish, ack, round start or idle tick
	rearms       atomic.Uint64
	resets       atomic.Uint64

	mu        sync.Mutex
	rateMsgs  float64
	rateBytes float64
	lastAcked uint64
	lastBytes uint64
	lastTick  time.Time
	hubSeqs   map[string]uint64 // hub stream → last new sequence acknowledged
	hubStream string            // stream of the last new ack
	dirty     bool
	lastSave  time.Time
	rearm     context.CancelFunc // cancels the running round; nil between rounds
	rearmed   bool               // the watchdog cancelled the round
}

// outboxState is the body of an Outbox's state file.
type outboxState struct {
	HubSeqs   map[string]uint64 `json:"hub_seqs"`
	HubStream string            `json:"hub_stream,omitempty"`
}

// load reads the hub sequences back from path ("" reads nothing).
func (m *meter) load(path string) error {
	st := outboxState{}
	if path != "" {
		if err := readState(vfs.OS, path, &st); err != nil {
			return err
		}
	}
	if st.HubSeqs == nil {
		st.HubSeqs = map[string]uint64{}
	}
	m.hubSeqs, m.hubStream = st.HubSeqs, st.HubStream
	return nil
}

// save writes the hub sequences to path when they changed and the last
// write is saveInterval old, or force is set.
func (m *meter) save(path string, force bool) error {
	if path == "" {
		return nil
	}
	m.mu.Lock()
	if !m.dirty || (!force && time.Since(m.lastSave) < saveInterval) {
		m.mu.Unlock()
		return nil
	}
	st := outboxState{HubSeqs: make(map[string]uint64, len(m.hubSeqs)), HubStream: m.hubStream}
	for k, v := range m.hubSeqs {
		st.HubSeqs[k] = v
	}
	m.dirty, m.lastSave = false, time.Now()
	m.mu.Unlock()
	if err := writeState(vfs.OS, path, st); err != nil {
		m.mu.Lock()
		m.dirty = true
		m.mu.Unlock()
		return err
	}
	return nil
}

// touch records progress for the watchdog.
func (m *meter) touch() { m.lastProgress.Store(time.Now().UnixNano()) }

// armRound lets the watchdog cancel the round about to start.
func (m *meter) armRound(cancel context.CancelFunc) {
	m.mu.Lock()
	m.rearm, m.rearmed = cancel, false
	m.mu.Unlock()
	m.touch()
}

// disarmRound ends the round and reports whether the watchdog cancelled
// it.
func (m *meter) disarmRound() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.rearmed
	m.rearm, m.rearmed = nil, false
	return r
}

// noteHubSeq records the hub sequence of a new (not duplicate) message.
// JetStream numbers a stream's messages upward for its whole life, purges
// included, so a sequence not above the last one seen means the stream
// was deleted and created again.
func (o *Outbox) noteHubSeq(stream string, seq uint64) {
	m := &o.meter
	m.mu.Lock()
	last, seen := m.hubSeqs[stream]
	m.hubSeqs[stream], m.hubStream, m.dirty = seq, stream, true
	m.mu.Unlock()
	if seen && seq <= last {
		m.resets.Add(1)
		o.log.Warn("hub stream recreated: PubAck sequence went back; forwarding continues, but the new stream's duplicate window is empty, so a retried message may be stored twice", "stream", stream, "seq", seq, "last_seq", last)
	}
}

// drainDelay waits a random time in [0, DrainJitter] when a backlog
// waits, and reports false if ctx ended meanwhile.
func (o *Outbox) drainDelay(ctx context.Context) bool {
	if o.cfg.DrainJitter <= 0 || o.stream.State().Msgs == 0 {
		return true
	}
	d := time.Duration(mathrand.Int64N(int64(o.cfg.DrainJitter) + 1))
	o.rs.Set(StateDelay)
	o.log.Info("uplink backlog drain starts after a jittered delay", "delay", d)
	return runstate.Sleep(ctx, d)
}

// tickInterval is how often the meter runs: each second, or more often
// for a short WatchdogAfter.
func (o *Outbox) tickInterval() time.Duration {
	return max(min(time.Second, o.cfg.WatchdogAfter/4), time.Millisecond)
}

// startMeter runs the meter's ticks until ctx ends or the returned
// function is called, which also waits for it.
func (o *Outbox) startMeter(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	o.meter.mu.Lock()
	o.meter.lastTick = time.Now()
	o.meter.mu.Unlock()
	o.meter.touch()
	go func() {
		defer close(done)
		t := time.NewTicker(o.tickInterval())
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				o.tick(now)
			}
		}
	}()
	return func() { cancel(); <-done }
}

// tick updates the drain rate, runs the watchdog and saves state.
func (o *Outbox) tick(now time.Time) {
	m := &o.meter
	acked, bytes := o.acked.Load(), m.ackedBytes.Load()
	m.mu.Lock()
	if dt := now.Sub(m.lastTick).Seconds(); dt > 0 {
		alpha := 1 - math.Exp(-dt/rateTau.Seconds())
		// Acked may step back by one when an ack turns out to remove
		// nothing (see processReplies).
		msgs := float64(acked) - float64(m.lastAcked)
		m.rateMsgs += alpha * (max(msgs, 0)/dt - m.rateMsgs)
		m.rateBytes += alpha * (float64(bytes-m.lastBytes)/dt - m.rateBytes)
		m.lastAcked, m.lastBytes, m.lastTick = acked, bytes, now
	}
	m.mu.Unlock()
	o.watchdog(now)
	if err := m.save(o.cfg.StateFile, false); err != nil {
		o.log.Warn("uplink state not saved", "error", err)
	}
	if err := o.sched.maybeSave(false); err != nil {
		o.log.Warn("uplink scheduler state not saved", "error", err)
	}
}

// watchdog restarts the round when the forwarder is connected, not held
// by the scheduler, and has a backlog but made no progress (no publish, no
// ack) for WatchdogAfter.
func (o *Outbox) watchdog(now time.Time) {
	m := &o.meter
	state := o.rs.State()
	if reason, _ := o.sched.slotStatus(o.slot); state != StateForwarding || reason != "" {
		m.touch() // only time spent forwarding unheld counts
		return
	}
	if o.stream.State().Msgs == 0 {
		m.touch() // idle is not stuck
		return
	}
	idle := now.Sub(time.Unix(0, m.lastProgress.Load()))
	if idle < o.cfg.WatchdogAfter {
		return
	}
	m.mu.Lock()
	cancel := m.rearm
	if cancel != nil {
		m.rearm, m.rearmed = nil, true
	}
	m.mu.Unlock()
	if cancel == nil {
		return
	}
	m.rearms.Add(1)
	o.log.Warn("uplink backlog stuck: no publish or ack while the link is ready; restarting the round", "idle", idle.Round(time.Millisecond), "in_flight", o.inFlight.Load())
	cancel()
}

// meterStatus adds the meter's and the scheduler's figures to s.
func (o *Outbox) meterStatus(s *Status) {
	m := &o.meter
	s.AckedBytes = m.ackedBytes.Load()
	s.AckedPayloadBytes = m.ackedPayload.Load()
	s.WatchdogRearms = m.rearms.Load()
	s.StreamResets = m.resets.Load()
	m.mu.Lock()
	s.RateMsgs, s.RateBytes = m.rateMsgs, m.rateBytes
	s.HubStream = m.hubStream
	s.HubSeq = m.hubSeqs[m.hubStream]
	m.mu.Unlock()
	if s.BacklogMsgs > 0 && s.RateMsgs > 0.01 {
		s.ETA = time.Duration(float64(s.BacklogMsgs) / s.RateMsgs * float64(time.Second))
	}
	s.Priority, s.MaxRate, s.DailyBudget = o.cfg.Priority, o.cfg.MaxRate, o.cfg.DailyBudget
	s.Waiting, s.BudgetUsed = o.sched.slotStatus(o.slot)
}
