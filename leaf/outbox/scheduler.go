package outbox

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/leafbox/leafbox/store/vfs"
)

// Reasons a forwarder is held by its Scheduler, reported in
// Status.Waiting.
const (
	WaitRate     = "rate"     // a MaxRate cap (the uplink's or the total) has no tokens yet
	WaitPriority = "priority" // an uplink of a higher class, or an earlier turn of its class, goes first
	WaitBudget   = "budget"   // a daily budget is used up until the next UTC day
)

// saveInterval bounds how often a Scheduler or an Outbox rewrites its
// state file while busy.
const saveInterval = time.Second

// SchedulerConfig configures a Scheduler.
type SchedulerConfig struct {
	// MaxRate caps the bytes per second all outboxes together publish
	// toward the hub; 0 is unlimited.
	MaxRate int64
	// DailyBudget caps the bytes all outboxes together publish per UTC
	// day; 0 is unlimited. Once it is used up, only the outboxes of the
	// highest priority class registered still forward, until 00:00 UTC.
	DailyBudget int64
	// StateFile persists the day's usage (total and per uplink) across
	// restarts; "" keeps it in memory only.
	StateFile string
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// Scheduler decides which of a gateway's outboxes publishes next toward
// the hub. Outboxes join it through Config.Scheduler; an Outbox without
// one gets a private Scheduler.
//
// Before each publish a forwarder asks for a turn with the message's size
// (subject, header and payload bytes):
//
//  1. it waits for its own MaxRate limiter (Config.MaxRate);
//  2. it waits until its daily budget, and the total one, allow it: an
//     uplink whose Config.DailyBudget is used up stops until 00:00 UTC;
//     when SchedulerConfig.DailyBudget is used up only the highest
//     priority class still flows. A message starts while usage is below
//     the budget, so a day may overshoot by one message;
//  3. it waits for the turn: among the forwarders ready to send, the
//     highest Config.Priority goes first, and within a class the one
//     served longest ago (round-robin). A forwarder stays ready from one
//     turn to its next request, until it calls idle (nothing more to send
//     for now) or waits for its own MaxRate, so a lower class cannot slip
//     in between two messages of a higher one;
//  4. holding the turn, it waits for the total MaxRate limiter, then
//     charges the budgets and passes the turn on.
//
// Rates use golang.org/x/time/rate token buckets with a burst of a tenth
// of a second's worth of bytes. Usage is written to StateFile at most once
// per saveInterval while it changes and on Close, so a crash forgets at
// most that much usage.
type Scheduler struct {
	cfg   SchedulerConfig
	now   func() time.Time
	total *rate.Limiter // nil when unlimited

	saveMu sync.Mutex // serialises state file writes

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced whenever a waiter may proceed
	slots    []*slot
	turn     bool   // some slot holds the turn
	serial   uint64 // counts turns granted
	day      string // the UTC day usage counts for, "2006-01-02"
	used     int64
	usedBy   map[string]int64
	dirty    bool
	lastSave time.Time
}

// slot is one outbox's place in a Scheduler; its fields are guarded by
// Scheduler.mu.
type slot struct {
	name     string
	priority int
	budget   int64
	limit    *rate.Limiter // nil when unlimited
	ready    bool          // has a message to send: asking for the turn, or between two turns
	served   uint64        // serial of its last turn
	reason   string        // why it is held, "" when not
	prepaid  bool          // its own limiter's tokens are taken for the message asked for
}

// errWoken is acquire's answer when its wake channel fired: the caller
// does its work and asks again for the same message.
var errWoken = errors.New("outbox: scheduler wait interrupted")

// schedState is the body of a Scheduler's state file.
type schedState struct {
	Day     string           `json:"day"`
	Total   int64            `json:"total_bytes"`
	Uplinks map[string]int64 `json:"uplink_bytes,omitempty"`
}

// OpenScheduler returns a Scheduler, reading the day's usage back from
// cfg.StateFile when it exists. A damaged state file is an error wrapping
// ErrBadState.
func OpenScheduler(cfg SchedulerConfig) (*Scheduler, error) {
	if cfg.MaxRate < 0 || cfg.DailyBudget < 0 {
		return nil, fmt.Errorf("outbox: scheduler: negative max rate %d or daily budget %d", cfg.MaxRate, cfg.DailyBudget)
	}
	s := &Scheduler{cfg: cfg, now: cfg.Now, changed: make(chan struct{}), usedBy: map[string]int64{}}
	if s.now == nil {
		s.now = time.Now
	}
	if cfg.MaxRate > 0 {
		s.total = newLimiter(cfg.MaxRate)
	}
	s.day = s.today()
	if cfg.StateFile != "" {
		var st schedState
		if err := readState(vfs.OS, cfg.StateFile, &st); err != nil {
			return nil, err
		}
		if st.Day == s.day {
			s.used = st.Total
			for k, v := range st.Uplinks {
				s.usedBy[k] = v
			}
		}
	}
	return s, nil
}

// newLimiter returns a token bucket of bytesPerSec with a tenth of a
// second's burst.
func newLimiter(bytesPerSec int64) *rate.Limiter {
	return rate.NewLimiter(rate.Limit(bytesPerSec), int(max(bytesPerSec/10, 1)))
}

// waitN takes n tokens from l, in bursts when n exceeds its burst.
func waitN(ctx context.Context, l *rate.Limiter, n int) error {
	for n > 0 {
		k := min(n, l.Burst())
		if err := l.WaitN(ctx, k); err != nil {
			return err
		}
		n -= k
	}
	return nil
}

func (s *Scheduler) today() string { return s.now().UTC().Format(time.DateOnly) }

// untilTomorrow is the time left until 00:00 UTC.
func (s *Scheduler) untilTomorrow() time.Duration {
	now := s.now().UTC()
	y, m, d := now.Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC).Sub(now)
}

// rollDay starts a new day's usage when the UTC day changed. s.mu is held.
func (s *Scheduler) rollDay() {
	if d := s.today(); d != s.day {
		s.day, s.used, s.usedBy, s.dirty = d, 0, map[string]int64{}, true
		s.broadcast()
	}
}

// broadcast wakes every waiter. s.mu is held.
func (s *Scheduler) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// register adds an outbox named name. Names are unique per Scheduler.
func (s *Scheduler) register(name string, priority int, maxRate, budget int64) (*slot, error) {
	if maxRate < 0 || budget < 0 {
		return nil, fmt.Errorf("outbox: negative max rate %d or daily budget %d", maxRate, budget)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.slots {
		if sl.name == name {
			return nil, fmt.Errorf("outbox: scheduler: uplink %q registered twice", name)
		}
	}
	sl := &slot{name: name, priority: priority, budget: budget}
	if maxRate > 0 {
		sl.limit = newLimiter(maxRate)
	}
	s.slots = append(s.slots, sl)
	s.broadcast()
	return sl, nil
}

// unregister removes sl.
func (s *Scheduler) unregister(sl *slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.slots {
		if x == sl {
			s.slots = append(s.slots[:i], s.slots[i+1:]...)
			break
		}
	}
	s.broadcast()
}

// topPriority is the highest class registered. s.mu is held.
func (s *Scheduler) topPriority() int {
	top := 0
	for i, sl := range s.slots {
		if i == 0 || sl.priority > top {
			top = sl.priority
		}
	}
	return top
}

// budgetAllows reports whether sl may start a message today. s.mu is held.
func (s *Scheduler) budgetAllows(sl *slot) bool {
	if sl.budget > 0 && s.usedBy[sl.name] >= sl.budget {
		return false
	}
	if s.cfg.DailyBudget > 0 && s.used >= s.cfg.DailyBudget && sl.priority < s.topPriority() {
		return false
	}
	return true
}

// next is the waiting slot whose turn it is: the highest class, then the
// one served longest ago. s.mu is held.
func (s *Scheduler) next() *slot {
	var best *slot
	for _, sl := range s.slots {
		if !sl.ready {
			continue
		}
		if best == nil || sl.priority > best.priority || (sl.priority == best.priority && sl.served < best.served) {
			best = sl
		}
	}
	return best
}

// setReady marks sl ready or not, waking the waiters when that changes.
// s.mu is held.
func (s *Scheduler) setReady(sl *slot, ready bool) {
	if sl.ready != ready {
		sl.ready = ready
		s.broadcast()
	}
}

// idle tells s that sl has nothing more to send for now, so the turn
// may pass to lower classes.
func (s *Scheduler) idle(sl *slot) {
	s.mu.Lock()
	s.setReady(sl, false)
	s.mu.Unlock()
}

func (s *Scheduler) setReason(sl *slot, r string) {
	s.mu.Lock()
	sl.reason = r
	s.mu.Unlock()
}

// acquire blocks until sl may publish n bytes, as the type's comment
// describes, or ctx ends. A signal on wake interrupts the waits for the
// budget and the turn with errWoken; asking again for the same message
// does not charge its own limiter twice.
func (s *Scheduler) acquire(ctx context.Context, sl *slot, n int, wake <-chan struct{}) error {
	if sl.limit != nil && !sl.prepaid {
		// Take n tokens, the first burst at once when the bucket has it:
		// a forwarder within its cap stays ready.
		rest := n
		if first := min(rest, sl.limit.Burst()); sl.limit.AllowN(time.Now(), first) {
			rest -= first
		}
		if rest > 0 {
			s.mu.Lock()
			s.setReady(sl, false) // held by its own cap: not ready
			sl.reason = WaitRate
			s.mu.Unlock()
			if err := waitN(ctx, sl.limit, rest); err != nil {
				s.setReason(sl, "")
				return err
			}
		}
		sl.prepaid = true // only this slot's forwarder touches it
	}
	for {
		s.mu.Lock()
		s.rollDay()
		if !s.budgetAllows(sl) {
			s.setReady(sl, false)
			sl.reason = WaitBudget
			ch, until := s.changed, s.untilTomorrow()
			s.mu.Unlock()
			t := time.NewTimer(until)
			select {
			case <-ctx.Done():
				t.Stop()
				sl.prepaid = false
				s.setReason(sl, "")
				return ctx.Err()
			case <-wake:
				t.Stop()
				return errWoken
			case <-t.C:
			case <-ch:
				t.Stop()
			}
			continue
		}
		s.setReady(sl, true)
		if !s.turn && s.next() == sl {
			s.turn, sl.reason = true, ""
			if s.total != nil {
				sl.reason = WaitRate
			}
			s.mu.Unlock()
			break
		}
		sl.reason = WaitPriority
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			s.mu.Lock()
			s.setReady(sl, false)
			sl.reason, sl.prepaid = "", false
			s.mu.Unlock()
			return ctx.Err()
		case <-wake:
			return errWoken
		case <-ch:
		}
	}
	var err error
	if s.total != nil {
		err = waitN(ctx, s.total, n)
	}
	s.mu.Lock()
	s.turn, sl.reason, sl.prepaid = false, "", false
	if err == nil {
		s.serial++
		sl.served = s.serial
		s.used += int64(n)
		s.usedBy[sl.name] += int64(n)
		s.dirty = true
	}
	s.broadcast()
	s.mu.Unlock()
	return err
}

// slotStatus returns sl's hold reason and today's usage.
func (s *Scheduler) slotStatus(sl *slot) (reason string, used int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollDay()
	return sl.reason, s.usedBy[sl.name]
}

// SchedulerStatus is a snapshot of a Scheduler.
type SchedulerStatus struct {
	// Day is the UTC day the usage counts for ("2006-01-02").
	Day string
	// Used is the bytes published today across all outboxes.
	Used int64
	// MaxRate and DailyBudget are the configured totals (0: unlimited).
	MaxRate, DailyBudget int64
	// Exhausted is true when DailyBudget is used up: only the highest
	// priority class flows.
	Exhausted bool
}

// Status returns a snapshot of the totals.
func (s *Scheduler) Status() SchedulerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rollDay()
	return SchedulerStatus{
		Day: s.day, Used: s.used, MaxRate: s.cfg.MaxRate, DailyBudget: s.cfg.DailyBudget,
		Exhausted: s.cfg.DailyBudget > 0 && s.used >= s.cfg.DailyBudget,
	}
}

// maybeSave writes the state file when usage changed and the last write
// is saveInterval old (or force is set).
func (s *Scheduler) maybeSave(force bool) error {
	if s.cfg.StateFile == "" {
		return nil
	}
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	s.mu.Lock()
	if !s.dirty || (!force && s.now().Sub(s.lastSave) < saveInterval) {
		s.mu.Unlock()
		return nil
	}
	st := schedState{Day: s.day, Total: s.used, Uplinks: make(map[string]int64, len(s.usedBy))}
	for k, v := range s.usedBy {
		st.Uplinks[k] = v
	}
	s.dirty, s.lastSave = false, s.now()
	s.mu.Unlock()
	if err := writeState(vfs.OS, s.cfg.StateFile, st); err != nil {
		s.mu.Lock()
		s.dirty = true
		s.mu.Unlock()
		return err
	}
	return nil
}

// Close writes the state file if usage changed since the last write. The
// outboxes using s must be closed first.
func (s *Scheduler) Close() error { return s.maybeSave(true) }

// acquire waits for the scheduler's turn to publish size bytes, applying
// the acks that arrive meanwhile with apply (the scheduler wakes the wait
// for them), and returns the first error of either.
func (o *Outbox) acquire(ctx context.Context, size int, apply func() error) error {
	for {
		err := o.sched.acquire(ctx, o.slot, size, o.ackSig)
		if !errors.Is(err, errWoken) {
			return err
		}
		if err := apply(); err != nil {
			return err
		}
	}
}
