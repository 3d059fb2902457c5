package outbox

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/store"
)

// machine is a gateway's clocks under the test's control: the wall
// clock, the monotonic time since boot and the OS sync status.
type machine struct {
	mu     sync.Mutex
	boot   string
	wall   time.Time
	mono   time.Duration
	synced bool
}

func (m *machine) advance(d time.Duration) {
	m.mu.Lock()
	m.wall, m.mono = m.wall.Add(d), m.mono+d
	m.mu.Unlock()
}

func (m *machine) setWall(t time.Time, synced bool) {
	m.mu.Lock()
	m.wall, m.synced = t, synced
	m.mu.Unlock()
}

// reboot starts a new boot: a new boot id, the monotonic clock from
// zero, the wall clock back at 1970, unsynchronised.
func (m *machine) reboot(id string) {
	m.mu.Lock()
	m.boot, m.wall, m.mono, m.synced = id, epoch, 0, false
	m.mu.Unlock()
}

// clock opens a Clock over m with its state in dir.
func (m *machine) clock(t testing.TB, dir string) *clock.Clock {
	t.Helper()
	m.mu.Lock()
	boot := m.boot
	m.mu.Unlock()
	c, err := clock.Open(clock.Config{
		StatePath: dir + "/clock.json",
		BootID:    boot,
		Now:       func() time.Time { m.mu.Lock(); defer m.mu.Unlock(); return m.wall },
		Mono:      func() time.Duration { m.mu.Lock(); defer m.mu.Unlock(); return m.mono },
		Synced:    func() bool { m.mu.Lock(); defer m.mu.Unlock(); return m.synced },
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var (
	epoch = time.Unix(0, 0).UTC()
	today = time.Date(2026, time.November, 29, 10, 0, 0, 0, time.UTC)
)

// mustExpire runs one expiry pass and requires it to remove want
// messages.
func mustExpire(t *testing.T, ob *Outbox, want uint64) {
	t.Helper()
	n, err := ob.expireAged()
	if err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Fatalf("expired %d messages, want %d", n, want)
	}
}

// requireBacklog requires the stream to hold exactly the sequences
// first..last.
func requireBacklog(t *testing.T, s store.Stream, first, last uint64) {
	t.Helper()
	st := s.State()
	if first > last {
		if st.Msgs != 0 {
			t.Fatalf("backlog %d messages (%d..%d), want none", st.Msgs, st.FirstSeq, st.LastSeq)
		}
		return
	}
	if st.Msgs != last-first+1 || st.FirstSeq != first || st.LastSeq != last {
		t.Fatalf("backlog %d messages (%d..%d), want %d..%d", st.Msgs, st.FirstSeq, st.LastSeq, first, last)
	}
}

// TestMaxAgeSurvivesClockJumpFrom1970: a gateway boots at 1970 and
// captures a backlog an hour long; NTP then sets the clock to 2026.
// Nothing expires at the jump; each message expires an hour of
// monotonic time after its capture.
func TestMaxAgeSurvivesClockJumpFrom1970(t *testing.T) {
	m := &machine{boot: "boot-1", wall: epoch, mono: 20 * time.Second}
	c := m.clock(t, t.TempDir())
	s := newMem(t, store.Config{Name: "up"})
	ob := newOutbox(t, s, newFakeHub(false), Config{Clock: c, MaxAge: time.Hour})

	for i := range 60 { // one message a minute for an hour
		if i > 0 {
			m.advance(time.Minute)
		}
		capture(t, ob, 1, i)
	}
	mustExpire(t, ob, 0)
	if age := ob.Status().OldestAge; age != 59*time.Minute {
		t.Fatalf("oldest age %v, want 59m", age)
	}

	m.setWall(today, true) // NTP: 1970 → 2026
	c.Refresh()
	if st := c.Status(); !st.Trusted || st.Source != clock.SourceOS {
		t.Fatalf("clock %+v, want trusted by os", st)
	}
	mustExpire(t, ob, 0)
	requireBacklog(t, s, 1, 60)
	if age := ob.Status().OldestAge; age != 59*time.Minute {
		t.Fatalf("oldest age %v after the jump, want 59m", age)
	}

	// A minute later the first message is an hour old: it expires; 30
	// minutes later, 30 more have.
	m.advance(time.Minute - time.Nanosecond)
	mustExpire(t, ob, 0)
	m.advance(time.Nanosecond)
	mustExpire(t, ob, 1)
	m.advance(30 * time.Minute)
	mustExpire(t, ob, 30)
	requireBacklog(t, s, 32, 60)
	m.advance(time.Hour)
	mustExpire(t, ob, 29)
	requireBacklog(t, s, 1, 0)

	st := ob.Status()
	if st.Dropped[DropAge] != 60 || st.Dropped[DropLimits] != 0 {
		t.Fatalf("dropped %v, want 60 by max_age only", st.Dropped)
	}
}

// TestMaxAgeEarlierBoot: messages of an earlier boot are aged by their
// trusted capture time once the clock is trusted again; those captured
// untrusted have no age of their own and stay, unless a later message is
// known to be too old.
func TestMaxAgeEarlierBoot(t *testing.T) {
	dir := t.TempDir()
	m := &machine{boot: "boot-1", wall: epoch, mono: time.Second}
	c1 := m.clock(t, dir)
	s := newMem(t, store.Config{Name: "up"})
	ob1 := newOutbox(t, s, newFakeHub(false), Config{Clock: c1, MaxAge: time.Hour})
	capture(t, ob1, 3, 0) // 1-3: untrusted
	c1.ObserveHubTime(today)
	capture(t, ob1, 2, 3) // 4-5: trusted, at today
	if err := c1.Close(); err != nil {
		t.Fatal(err)
	}
	_ = ob1.Close()

	m.reboot("boot-2")
	c2 := m.clock(t, dir)
	ob2 := newOutbox(t, s, newFakeHub(false), Config{Clock: c2, MaxAge: time.Hour})
	m.advance(10 * time.Hour) // untrusted: no age is known
	mustExpire(t, ob2, 0)
	requireBacklog(t, s, 1, 5)
	if age := ob2.Status().OldestAge; age != 0 {
		t.Fatalf("oldest age %v, want 0 (unknown)", age)
	}

	// The hub says 30 minutes have passed since 4-5: kept.
	c2.ObserveHubTime(today.Add(30 * time.Minute))
	mustExpire(t, ob2, 0)
	// Two hours: 4-5 are too old, and 1-3, captured before them, too.
	c2.ObserveHubTime(today.Add(2 * time.Hour))
	mustExpire(t, ob2, 5)
	requireBacklog(t, s, 1, 0)
}

// TestMaxAgeUntrustedEarlierBootKept: a backlog captured untrusted on an
// earlier boot never expires by age, even once the clock is trusted;
// only a later message known to be too old expires it, in order.
func TestMaxAgeUntrustedEarlierBootKept(t *testing.T) {
	dir := t.TempDir()
	m := &machine{boot: "boot-1", wall: epoch, mono: time.Second}
	c1 := m.clock(t, dir)
	s := newMem(t, store.Config{Name: "up"})
	ob1 := newOutbox(t, s, newFakeHub(false), Config{Clock: c1, MaxAge: time.Hour})
	capture(t, ob1, 3, 0)
	_ = ob1.Close()

	m.reboot("boot-2")
	c2 := m.clock(t, dir)
	ob2 := newOutbox(t, s, newFakeHub(false), Config{Clock: c2, MaxAge: time.Hour})
	m.setWall(today.AddDate(10, 0, 0), true)
	c2.Refresh()
	m.advance(24 * time.Hour)
	mustExpire(t, ob2, 0)
	mustExpire(t, ob2, 0) // from the skip cursor
	requireBacklog(t, s, 1, 3)

	capture(t, ob2, 1, 3) // 4, this boot
	m.advance(59 * time.Minute)
	mustExpire(t, ob2, 0)
	m.advance(time.Minute)
	mustExpire(t, ob2, 4)
	requireBacklog(t, s, 1, 0)
}

func TestCaptureStampHeaders(t *testing.T) {
	m := &machine{boot: "boot-1", wall: epoch, mono: 1500 * time.Millisecond}
	c := m.clock(t, t.TempDir())
	s := newMem(t, store.Config{Name: "up"})
	hub := newFakeHub(true)
	ob := newOutbox(t, s, hub, Config{Clock: c, HubPrefix: "site."})
	if err := ob.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := ob.Capture("a", []byte("NATS/1.0\r\nX-App: 1\r\n\r\n"), []byte("one")); err != nil {
		t.Fatal(err)
	}
	p := hub.next(t)
	want := map[string]string{"X-App": "1", HeaderBootID: "boot-1", HeaderMono: "1500000000"}
	for k, v := range want {
		if got, ok := headerValue(p.hdr, k); !ok || got != v {
			t.Fatalf("header %s = %q, want %q in %q", k, got, v, p.hdr)
		}
	}
	if v, ok := headerValue(p.hdr, HeaderTime); ok {
		t.Fatalf("untrusted capture carries %s: %s", HeaderTime, v)
	}
	if p.subject != "site.a" || string(p.data) != "one" {
		t.Fatalf("forwarded %q %q", p.subject, p.data)
	}
	ack(ob, p, "S")

	c.ObserveHubTime(today)
	m.advance(time.Second)
	if err := ob.Capture("b", nil, []byte("two")); err != nil {
		t.Fatal(err)
	}
	p = hub.next(t)
	if v, _ := headerValue(p.hdr, HeaderTime); v != today.Add(time.Second).Format(time.RFC3339Nano) {
		t.Fatalf("%s = %q, want %v", HeaderTime, v, today.Add(time.Second))
	}
	for _, k := range []string{HeaderBootID, HeaderMono} {
		if v, ok := headerValue(p.hdr, k); ok {
			t.Fatalf("trusted capture carries %s: %s", k, v)
		}
	}
	// A publisher's own stamp (and Nats-Msg-Id) is kept.
	own := []byte("NATS/1.0\r\n" + HeaderBootID + ": other\r\n" + HeaderMono + ": 7\r\n" + HeaderMsgID + ": mine\r\n\r\n")
	if got, _ := ob.captureHeader(nil, own); string(got) != string(own) {
		t.Fatalf("stamp replaced: %q", got)
	}
}

// TestMaxAgeLoopInBubble runs the outbox's own age loop in a synctest
// bubble: fake time drives the loop's ticker and the monotonic clock, so
// an hour passes in no time.
func TestMaxAgeLoopInBubble(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		wall, synced := epoch, false
		c, err := clock.Open(clock.Config{
			StatePath: dir + "/clock.json",
			BootID:    "boot-1",
			Now:       func() time.Time { mu.Lock(); defer mu.Unlock(); return wall.Add(time.Since(start)) },
			Mono:      func() time.Duration { return time.Since(start) },
			Synced:    func() bool { mu.Lock(); defer mu.Unlock(); return synced },
		})
		if err != nil {
			t.Fatal(err)
		}
		s := newMem(t, store.Config{Name: "up"})
		ob := newOutbox(t, s, newFakeHub(false), Config{Clock: c, MaxAge: time.Hour})
		if err := ob.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		for i := range 10 {
			capture(t, ob, 1, i)
			time.Sleep(time.Minute)
		}
		mu.Lock()
		wall, synced = today.Add(-10*time.Minute), true
		mu.Unlock()
		c.Refresh()
		time.Sleep(30 * time.Minute)
		synctest.Wait()
		requireBacklog(t, s, 1, 10)
		time.Sleep(21*time.Minute + 30*time.Second) // 1h01m30s after the first capture
		synctest.Wait()
		requireBacklog(t, s, 3, 10)
		time.Sleep(time.Hour)
		synctest.Wait()
		requireBacklog(t, s, 1, 0)
		if d := ob.Status().Dropped; d[DropAge] != 10 {
			t.Fatalf("dropped %v", d)
		}
	})
}

// TestMaxAgeWithoutClock: without a Clock the outbox ages messages by the
// store's timestamps and the wall clock, as a stream MaxAge would. The
// bubble's fake time drives both.
func TestMaxAgeWithoutClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newMem(t, store.Config{Name: "up"})
		ob := newOutbox(t, s, newFakeHub(false), Config{MaxAge: time.Hour})
		capture(t, ob, 2, 0)
		time.Sleep(30 * time.Minute)
		capture(t, ob, 1, 2)
		if h, ok := headerValue(mustLoad(t, s, 1).Header, HeaderBootID); ok {
			t.Fatalf("stamped without a clock: %s", h)
		}
		time.Sleep(30 * time.Minute)
		mustExpire(t, ob, 2)
		requireBacklog(t, s, 3, 3)
		if age := ob.Status().OldestAge; age != 30*time.Minute {
			t.Fatalf("oldest age %v", age)
		}
	})
}

func mustLoad(t *testing.T, s store.Stream, seq uint64) *store.Msg {
	t.Helper()
	m, err := s.Load(seq, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
