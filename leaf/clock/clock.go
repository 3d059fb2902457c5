package clock

import (
	"context"
	"sync"
	"time"
)

// DefaultFloor is the last known-good time of a gateway without a state
// file: no clock reading before it is trusted.
var DefaultFloor = time.Date(2026, time.January, 1, 0, 0, 0, 0, time.UTC)

// Defaults of Run's intervals.
const (
	// DefaultRefreshInterval is how often Run asks the OS whether the
	// clock is synchronised (a cheap system call).
	DefaultRefreshInterval = 5 * time.Second
	// DefaultSaveInterval is how often Run saves the last known-good
	// time. The saved time is only a lower bound, so losing the last few
	// minutes to a power cut costs nothing; rare writes spare SD cards.
	DefaultSaveInterval = 10 * time.Minute
)

// Source says what vouches for the wall clock.
type Source string

// Trust sources.
const (
	SourceNone Source = ""    // nothing vouches: not trusted
	SourceOS   Source = "os"  // the kernel reports the clock synchronised
	SourceHub  Source = "hub" // a time observed from the hub
)

// Config configures a Clock. Zero fields take the real machine's sources.
type Config struct {
	// StatePath is the file keeping the last known-good time; "" keeps it
	// in memory only.
	StatePath string
	// Floor is the last known-good time when the state file does not
	// exist or holds an earlier time (DefaultFloor when zero).
	Floor time.Time
	// RefreshInterval is how often Run asks the OS whether the clock is
	// synchronised (DefaultRefreshInterval when 0); SaveInterval how often
	// it saves the state file (DefaultSaveInterval when 0), also the first
	// time the clock is trusted.
	RefreshInterval, SaveInterval time.Duration
	// Now reads the wall clock (time.Now when nil).
	Now func() time.Time
	// Mono returns the monotonic time since boot (CLOCK_BOOTTIME on Linux,
	// the time since the process started elsewhere, when nil). It must
	// never go backwards within one boot id.
	Mono func() time.Duration
	// Synced reports whether the OS has the wall clock synchronised
	// (adjtimex on Linux, never elsewhere, when nil).
	Synced func() bool
	// BootID identifies this boot (the kernel's boot_id on Linux, a random
	// id per process elsewhere, when "").
	BootID string
}

// Stamp is the time of one event, as well as it can be known.
type Stamp struct {
	// BootID and Mono place the event on this boot's monotonic time line.
	BootID string
	Mono   time.Duration
	// Trusted reports whether Wall is a trusted wall-clock time; when
	// false Wall is the local clock's reading, which may be anything.
	Trusted bool
	Wall    time.Time
}

// Status describes the clock's trust, for /healthz and logs.
type Status struct {
	// Trusted reports whether a source vouches for the time; Source is
	// which (SourceNone when not trusted).
	Trusted bool
	Source  Source
	// Now is the trusted time, or the local clock's reading when not
	// trusted; Offset is the trusted time minus the local clock's (0 when
	// not trusted or vouched by the OS).
	Now    time.Time
	Offset time.Duration
	// LastKnownGood is the latest trusted time seen, on this boot or an
	// earlier one (or the floor).
	LastKnownGood time.Time
	// Rejected explains an untrusted clock whose source vouched for a time
	// earlier than LastKnownGood (the clock went backwards): it names the
	// source. It is SourceNone while trusted.
	Rejected Source
	// BootID and Mono are this boot's id and monotonic time.
	BootID string
	Mono   time.Duration
	// HubTime is the last time observed from the hub (zero if none).
	HubTime time.Time
}

// Clock tracks the boot id, the monotonic time and the wall clock's
// trust. It is safe for concurrent use; build it with Open.
type Clock struct {
	cfg    Config
	bootID string
	resync func() // follows CLOCK_BOOTTIME across suspends (the OS's Mono only)

	mu       sync.Mutex
	lkg      time.Time     // last known-good time
	hubWall  time.Time     // last hub time observed
	hubMono  time.Duration // Mono when hubWall was observed
	hubSeen  bool
	osSynced bool // the last Refresh's answer
	saved    time.Time
	closed   bool
}

// Open builds a Clock, reading the last known-good time from
// cfg.StatePath when it exists. A state file that cannot be read or
// parsed is an error.
func Open(cfg Config) (*Clock, error) {
	if cfg.Floor.IsZero() {
		cfg.Floor = DefaultFloor
	}
	if cfg.SaveInterval <= 0 {
		cfg.SaveInterval = DefaultSaveInterval
	}
	if cfg.RefreshInterval <= 0 {
		cfg.RefreshInterval = DefaultRefreshInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	resync := func() {}
	if cfg.Mono == nil {
		cfg.Mono, resync = osMono, osResync
	}
	if cfg.Synced == nil {
		cfg.Synced = osSynced
	}
	c := &Clock{cfg: cfg, bootID: cfg.BootID, lkg: cfg.Floor, resync: resync}
	if c.bootID == "" {
		c.bootID = osBootID()
	}
	if cfg.StatePath != "" {
		st, err := readState(cfg.StatePath)
		if err != nil {
			return nil, err
		}
		if st.LastKnownGood.After(c.lkg) {
			c.lkg = st.LastKnownGood
		}
	}
	c.saved = c.lkg // nothing new to save yet
	c.osSynced = cfg.Synced()
	return c, nil
}

// BootID returns this boot's id.
func (c *Clock) BootID() string { return c.bootID }

// Mono returns the monotonic time since boot.
func (c *Clock) Mono() time.Duration { return c.cfg.Mono() }

// Refresh asks the OS again whether the clock is synchronised, and
// catches the monotonic clock up with a suspend; Run calls it
// periodically. Stamp and Status use the last answer.
func (c *Clock) Refresh() {
	c.resync()
	synced := c.cfg.Synced()
	c.mu.Lock()
	c.osSynced = synced
	c.mu.Unlock()
}

// ObserveHubTime records t, a time read from the hub (a JetStream API
// response's "ts", say), as observed now. If it is not earlier than the
// last known-good time, the clock is trusted from then on with t plus the
// monotonic time elapsed as its time.
func (c *Clock) ObserveHubTime(t time.Time) {
	if t.IsZero() {
		return
	}
	mono := c.cfg.Mono()
	c.mu.Lock()
	c.hubWall, c.hubMono, c.hubSeen = t, mono, true
	c.mu.Unlock()
}

// Stamp returns the time of an event happening now.
func (c *Clock) Stamp() Stamp {
	st := c.Status()
	return Stamp{BootID: st.BootID, Mono: st.Mono, Trusted: st.Trusted, Wall: st.Now}
}

// Status evaluates the trust now. While trusted it advances the last
// known-good time (in memory; Save persists it).
func (c *Clock) Status() Status {
	wall := c.cfg.Now()
	mono := c.cfg.Mono()
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{BootID: c.bootID, Mono: mono, Now: wall, HubTime: c.hubWall}
	switch {
	case c.osSynced && !wall.Before(c.lkg):
		st.Trusted, st.Source = true, SourceOS
	case c.hubSeen && !c.hubWall.Add(mono-c.hubMono).Before(c.lkg):
		st.Trusted, st.Source = true, SourceHub
		st.Now = c.hubWall.Add(mono - c.hubMono)
		st.Offset = st.Now.Sub(wall)
	}
	switch {
	case st.Trusted:
	case c.osSynced && wall.Before(c.lkg):
		st.Rejected = SourceOS
	case c.hubSeen && c.hubWall.Add(mono-c.hubMono).Before(c.lkg):
		st.Rejected = SourceHub
	}
	if st.Trusted && st.Now.After(c.lkg) {
		c.lkg = st.Now
	}
	st.LastKnownGood = c.lkg
	return st
}

// Save writes the last known-good time to the state file if it advanced
// since the last save. Without a state file it does nothing.
func (c *Clock) Save() error {
	if c.cfg.StatePath == "" {
		return nil
	}
	c.Status() // advance the last known-good time to now when trusted
	c.mu.Lock()
	lkg := c.lkg
	dirty := lkg.After(c.saved)
	c.mu.Unlock()
	if !dirty {
		return nil
	}
	if err := writeState(c.cfg.StatePath, state{Version: stateVersion, LastKnownGood: lkg, BootID: c.bootID}); err != nil {
		return err
	}
	c.mu.Lock()
	if lkg.After(c.saved) {
		c.saved = lkg
	}
	c.mu.Unlock()
	return nil
}

// Run refreshes the OS sync status every RefreshInterval and saves the
// state file every SaveInterval, and as soon as the clock is first
// trusted, until ctx ends. Save errors are passed to onError (which may be
// nil) and retried at the next refresh.
func (c *Clock) Run(ctx context.Context, onError func(error)) {
	t := time.NewTicker(c.cfg.RefreshInterval)
	defer t.Stop()
	lastSave := time.Now()
	wasTrusted := c.Status().Trusted
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.Refresh()
		trusted := c.Status().Trusted
		if (trusted && !wasTrusted) || time.Since(lastSave) >= c.cfg.SaveInterval {
			if err := c.Save(); err != nil {
				if onError != nil {
					onError(err)
				}
				continue // retried at the next refresh
			}
			lastSave = time.Now()
			wasTrusted = trusted
		}
	}
}

// Close saves the state file a last time. Stop Run first. Calling it
// again does nothing.
func (c *Clock) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	if err := c.Save(); err != nil {
		return err
	}
	return nil
}
