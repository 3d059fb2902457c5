package clock

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeMachine is a gateway's clocks under the test's control.
type fakeMachine struct {
	mu     sync.Mutex
	wall   time.Time
	mono   time.Duration
	synced bool
}

func (m *fakeMachine) config(path string) Config {
	return Config{
		StatePath: path,
		BootID:    "boot-1",
		Now:       func() time.Time { m.mu.Lock(); defer m.mu.Unlock(); return m.wall },
		Mono:      func() time.Duration { m.mu.Lock(); defer m.mu.Unlock(); return m.mono },
		Synced:    func() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.synced },
	}
}

// advance moves both clocks forward by d.
func (m *fakeMachine) advance(d time.Duration) {
	m.mu.Lock()
	m.wall, m.mono = m.wall.Add(d), m.mono+d
	m.mu.Unlock()
}

// set jumps the wall clock to t and sets the OS sync status.
func (m *fakeMachine) set(t time.Time, synced bool) {
	m.mu.Lock()
	m.wall, m.synced = t, synced
	m.mu.Unlock()
}

var (
	epoch = time.Unix(0, 0).UTC()
	today = time.Date(2026, time.November, 29, 10, 0, 0, 0, time.UTC)
)

func mustOpen(t *testing.T, cfg Config) *Clock {
	t.Helper()
	c, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBootAt1970IsUntrusted(t *testing.T) {
	m := &fakeMachine{wall: epoch, mono: 3 * time.Second}
	c := mustOpen(t, m.config(""))
	st := c.Status()
	if st.Trusted || st.Source != SourceNone || st.Rejected != SourceNone {
		t.Fatalf("status %+v, want untrusted", st)
	}
	if !st.LastKnownGood.Equal(DefaultFloor) {
		t.Fatalf("last known good %v, want the floor %v", st.LastKnownGood, DefaultFloor)
	}
	s := c.Stamp()
	if s.Trusted || s.BootID != "boot-1" || s.Mono != 3*time.Second || !s.Wall.Equal(epoch) {
		t.Fatalf("stamp %+v", s)
	}
	// The OS claims sync but the clock is still at 1970: below the floor.
	m.set(epoch, true)
	c.Refresh()
	if st := c.Status(); st.Trusted || st.Rejected != SourceOS {
		t.Fatalf("status %+v, want untrusted with os rejected", st)
	}
}

func TestOSSyncTrusts(t *testing.T) {
	m := &fakeMachine{wall: epoch, mono: time.Second}
	c := mustOpen(t, m.config(""))
	m.set(today, true)
	if c.Status().Trusted {
		t.Fatal("trusted before Refresh asked the OS")
	}
	c.Refresh()
	st := c.Status()
	if !st.Trusted || st.Source != SourceOS || !st.Now.Equal(today) || st.Offset != 0 {
		t.Fatalf("status %+v, want trusted by os at %v", st, today)
	}
	m.advance(time.Minute)
	if st := c.Status(); !st.LastKnownGood.Equal(today.Add(time.Minute)) {
		t.Fatalf("last known good %v, want %v", st.LastKnownGood, today.Add(time.Minute))
	}
	if s := c.Stamp(); !s.Trusted || !s.Wall.Equal(today.Add(time.Minute)) {
		t.Fatalf("stamp %+v", s)
	}
}

func TestHubTimeTrusts(t *testing.T) {
	m := &fakeMachine{wall: epoch, mono: time.Second}
	c := mustOpen(t, m.config(""))
	c.ObserveHubTime(today)
	m.advance(10 * time.Second)
	st := c.Status()
	want := today.Add(10 * time.Second)
	if !st.Trusted || st.Source != SourceHub || !st.Now.Equal(want) {
		t.Fatalf("status %+v, want trusted by hub at %v", st, want)
	}
	if st.Offset != want.Sub(epoch.Add(10*time.Second)) {
		t.Fatalf("offset %v", st.Offset)
	}
	if s := c.Stamp(); !s.Trusted || !s.Wall.Equal(want) || s.Mono != 11*time.Second {
		t.Fatalf("stamp %+v", s)
	}
	// The OS takes over once it syncs.
	m.set(today.Add(time.Hour), true)
	c.Refresh()
	if st := c.Status(); st.Source != SourceOS || !st.Now.Equal(today.Add(time.Hour)) {
		t.Fatalf("status %+v, want os", st)
	}
}

func TestClockBackwardsBelowLastKnownGoodIsNotTrusted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock.json")
	m := &fakeMachine{wall: today, mono: time.Second, synced: true}
	c := mustOpen(t, m.config(path))
	if !c.Status().Trusted {
		t.Fatal("not trusted")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Next boot: the OS claims sync, but the clock reads a month earlier
	// than what was trusted last time; a hub time that old is refused
	// too.
	m2 := &fakeMachine{wall: today.AddDate(0, -1, 0), mono: time.Second, synced: true}
	cfg := m2.config(path)
	cfg.BootID = "boot-2"
	c2 := mustOpen(t, cfg)
	st := c2.Status()
	if st.Trusted || st.Rejected != SourceOS || !st.LastKnownGood.Equal(today) {
		t.Fatalf("status %+v, want untrusted, os rejected, last known good %v", st, today)
	}
	c2.ObserveHubTime(today.Add(-time.Hour))
	if st := c2.Status(); st.Trusted || st.Rejected != SourceOS {
		t.Fatalf("status %+v: trusted a hub time below last known good", st)
	}
	m2.set(today.AddDate(0, -1, 0), false) // the OS no longer claims sync
	c2.Refresh()
	if st := c2.Status(); st.Trusted || st.Rejected != SourceHub {
		t.Fatalf("status %+v, want untrusted with hub rejected", st)
	}
	// A hub time past the last known good is trusted, even though the
	// local clock is still wrong.
	c2.ObserveHubTime(today.Add(time.Hour))
	if st := c2.Status(); !st.Trusted || st.Source != SourceHub || st.Rejected != SourceNone {
		t.Fatalf("status %+v, want trusted by hub", st)
	}
}

func TestLastKnownGoodPersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "clock.json")
	m := &fakeMachine{wall: epoch, mono: time.Second}
	c := mustOpen(t, m.config(path))
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("untrusted clock wrote its state: %v", err)
	}
	c.ObserveHubTime(today)
	m.advance(5 * time.Second)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Restart at 1970: untrusted, but the last known good survived.
	m2 := &fakeMachine{wall: epoch}
	c2 := mustOpen(t, m2.config(path))
	st := c2.Status()
	if st.Trusted || !st.LastKnownGood.Equal(today.Add(5*time.Second)) {
		t.Fatalf("status %+v, want untrusted with last known good %v", st, today.Add(5*time.Second))
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("state directory holds %d entries, want only the state file", len(entries))
	}
}

func TestBadStateFileIsAnError(t *testing.T) {
	for name, content := range map[string]string{
		"garbage": "{not json",
		"version": `{"version":9,"last_known_good":"2026-01-01T00:00:00Z"}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "clock.json")
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Open(Config{StatePath: path})
			if err == nil || !strings.HasPrefix(err.Error(), "clock: ") {
				t.Fatalf("Open: %v, want a clock error", err)
			}
			if b, _ := os.ReadFile(path); string(b) != content {
				t.Fatal("the bad state file was changed")
			}
		})
	}
}

// TestRunSavesPeriodically runs in a synctest bubble: the bubble's fake
// time drives the ticker, the wall clock and the monotonic clock. Run
// saves as soon as the clock is trusted, then every SaveInterval.
func TestRunSavesPeriodically(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clock.json")
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		synced := false
		var mu sync.Mutex
		c := mustOpen(t, Config{
			StatePath:       path,
			BootID:          "boot-1",
			RefreshInterval: 5 * time.Second,
			SaveInterval:    10 * time.Minute,
			Floor:           start.Add(-time.Hour),
			Mono:            func() time.Duration { return time.Since(start) },
			Synced:          func() bool { mu.Lock(); defer mu.Unlock(); return synced },
		})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { c.Run(ctx, func(err error) { t.Error(err) }); close(done) }()
		defer func() { cancel(); <-done }()
		saved := func() time.Time {
			t.Helper()
			st, err := readState(path)
			if err != nil {
				t.Fatal(err)
			}
			return st.LastKnownGood
		}

		time.Sleep(61 * time.Second)
		synctest.Wait()
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("saved while untrusted: %v", err)
		}
		mu.Lock()
		synced = true // NTP synchronised; the refresh at 65s sees it and saves
		mu.Unlock()
		time.Sleep(4 * time.Second)
		synctest.Wait()
		first := start.Add(65 * time.Second)
		if got := saved(); !got.Equal(first) {
			t.Fatalf("saved %v, want %v", got, first)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if got := saved(); !got.Equal(first) {
			t.Fatalf("saved %v before SaveInterval, want still %v", got, first)
		}
		time.Sleep(5 * time.Minute)
		synctest.Wait()
		if got, want := saved(), first.Add(10*time.Minute); !got.Equal(want) {
			t.Fatalf("saved %v, want %v", got, want)
		}
	})
}

func TestOSSources(t *testing.T) {
	id := osBootID()
	if id == "" || id != osBootID() {
		t.Fatalf("boot id %q is not stable", id)
	}
	a := osMono()
	b := osMono()
	if a <= 0 || b < a {
		t.Fatalf("monotonic clock went %v then %v", a, b)
	}
	_ = osSynced() // whatever the machine says; it must not fail
	c := mustOpen(t, Config{})
	if c.BootID() != id {
		t.Fatalf("clock boot id %q, want %q", c.BootID(), id)
	}
}
