package systemd

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// listener is a notify socket as the service manager opens it; it
// collects every datagram.
type listener struct {
	path string
	msgs chan string
}

// newTestListener listens on a unixgram socket in a temporary directory.
func newTestListener(t *testing.T) *listener {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{path: path, msgs: make(chan string, 1024)}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 4096)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			l.msgs <- string(buf[:n])
		}
	})
	t.Cleanup(func() {
		conn.Close()
		wg.Wait()
	})
	return l
}

// next returns the next datagram, failing t if none comes within d.
func (l *listener) next(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case m := <-l.msgs:
		return m
	case <-time.After(d):
		t.Fatalf("no notification within %v", d)
		return ""
	}
}

func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func mustOpen(t *testing.T, path string) *Notifier {
	t.Helper()
	n, err := Open(env(SocketEnv, path))
	if err != nil || n == nil {
		t.Fatalf("Open(%q) = %v, %v", path, n, err)
	}
	return n
}

func TestNotifySendsOneDatagram(t *testing.T) {
	l := newTestListener(t)
	n := mustOpen(t, l.path)
	if n.Socket() != l.path {
		t.Fatalf("Socket() = %q, want %q", n.Socket(), l.path)
	}
	if err := n.Notify(Ready, Status("ready; uplink tel:\nconnected")); err != nil {
		t.Fatal(err)
	}
	if got, want := l.next(t, 5*time.Second), "READY=1\nSTATUS=ready; uplink tel: connected"; got != want {
		t.Fatalf("datagram %q, want %q", got, want)
	}
	if err := n.Notify(Stopping); err != nil {
		t.Fatal(err)
	}
	if got := l.next(t, 5*time.Second); got != "STOPPING=1" {
		t.Fatalf("datagram %q, want STOPPING=1", got)
	}
}

func TestNotifyAbstractSocket(t *testing.T) {
	name := "@leafbox-systemd-test-" + strings.ReplaceAll(t.Name(), "/", "-")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := mustOpen(t, name).Notify(Ready); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	k, err := conn.Read(buf)
	if err != nil || string(buf[:k]) != Ready {
		t.Fatalf("read %q, %v; want READY=1", buf[:k], err)
	}
}

func TestExtendTimeout(t *testing.T) {
	if got := ExtendTimeout(2*time.Minute + 1500*time.Microsecond); got != "EXTEND_TIMEOUT_USEC=120001500" {
		t.Fatalf("ExtendTimeout = %q", got)
	}
}

func TestOpenWithoutSocketIsANoOp(t *testing.T) {
	for _, lookup := range []func(string) (string, bool){env(), env(SocketEnv, "")} {
		n, err := Open(lookup)
		if n != nil || err != nil {
			t.Fatalf("Open = %v, %v; want nil, nil", n, err)
		}
		if err := n.Notify(Ready); err != nil {
			t.Fatalf("nil Notifier: %v", err)
		}
		if n.Socket() != "" {
			t.Fatal("nil Notifier has a socket")
		}
		n.Watch(context.Background(), time.Second, func() error { t.Fatal("nil Notifier ran the check"); return nil }, nil)
	}
}

func TestOpenRejectsARelativeSocket(t *testing.T) {
	_, err := Open(env(SocketEnv, "run/notify"))
	if !errors.Is(err, ErrBadSocket) || !strings.Contains(err.Error(), `"run/notify"`) {
		t.Fatalf("Open(relative) = %v, want ErrBadSocket naming it", err)
	}
}

func TestNotifyToAMissingSocketFails(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone")
	err := mustOpen(t, path).Notify(Ready)
	if err == nil || !strings.Contains(err.Error(), "systemd: notify "+path) {
		t.Fatalf("Notify to a missing socket = %v", err)
	}
}

func TestWatchdogInterval(t *testing.T) {
	cases := []struct {
		name    string
		lookup  func(string) (string, bool)
		want    time.Duration
		wantErr string
	}{
		{"unset", env(), 0, ""},
		{"set", env(WatchdogUsecEnv, "30000000"), 30 * time.Second, ""},
		{"this pid", env(WatchdogUsecEnv, "500000", WatchdogPIDEnv, "42"), 500 * time.Millisecond, ""},
		{"another pid", env(WatchdogUsecEnv, "500000", WatchdogPIDEnv, "43"), 0, ""},
		{"zero", env(WatchdogUsecEnv, "0"), 0, `WATCHDOG_USEC="0" is not a positive count`},
		{"junk", env(WatchdogUsecEnv, "30s"), 0, `WATCHDOG_USEC="30s" is not a positive count`},
		{"bad pid", env(WatchdogUsecEnv, "1", WatchdogPIDEnv, "x"), 0, `WATCHDOG_PID="x" is not a process id`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := WatchdogInterval(tc.lookup, 42)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("WatchdogInterval = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

// pingTimes collects the arrival times of the next k pings.
func pingTimes(t *testing.T, l *listener, k int, within time.Duration) []time.Time {
	t.Helper()
	var at []time.Time
	for range k {
		if m := l.next(t, within); m != WatchdogPing {
			t.Fatalf("datagram %q, want %s", m, WatchdogPing)
		}
		at = append(at, time.Now())
	}
	return at
}

// quiet fails t if a datagram arrives within d.
func (l *listener) quiet(t *testing.T, d time.Duration, why string) {
	t.Helper()
	select {
	case m := <-l.msgs:
		t.Fatalf("%s, yet %q arrived", why, m)
	case <-time.After(d):
	}
}

// drain discards what has arrived so far.
func (l *listener) drain() {
	for {
		select {
		case <-l.msgs:
		default:
			return
		}
	}
}

func TestWatchPingsAtHalfTheTimeout(t *testing.T) {
	l := newTestListener(t)
	n := mustOpen(t, l.path)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	const timeout = 400 * time.Millisecond
	go func() { defer close(done); n.Watch(ctx, timeout, func() error { return nil }, nil) }()
	at := pingTimes(t, l, 6, 5*time.Second)
	cancel()
	<-done
	// Five gaps of timeout/2 each: well inside the timeout, not a flood.
	if span := at[5].Sub(at[0]); span < 4*timeout/2 || span > 5*timeout {
		t.Fatalf("6 pings over %v, want about %v (every %v)", span, 5*timeout/2, timeout/2)
	}
	l.quiet(t, timeout, "Watch returned")
}

// A check that fails withholds the pings; once it passes they resume.
func TestWatchWithholdsPingsWhileTheCheckFails(t *testing.T) {
	l := newTestListener(t)
	n := mustOpen(t, l.path)
	var mu sync.Mutex
	healthy := true
	fails := make(chan error, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const timeout = 200 * time.Millisecond
	go n.Watch(ctx, timeout, func() error {
		mu.Lock()
		defer mu.Unlock()
		if !healthy {
			return errors.New("store is not writable")
		}
		return nil
	}, func(err error) { fails <- err })
	pingTimes(t, l, 2, 5*time.Second)

	mu.Lock()
	healthy = false
	mu.Unlock()
	for range 2 { // the second failure comes a half interval after any last ping
		if err := <-fails; err.Error() != "store is not writable" {
			t.Fatalf("onFail got %v", err)
		}
	}
	l.drain() // a ping from a check that passed before the switch
	l.quiet(t, 3*timeout, "the check fails")

	mu.Lock()
	healthy = true
	mu.Unlock()
	pingTimes(t, l, 2, 5*time.Second)
}

// A check that never returns (a wedged broker) stops the pings, and is
// not started a second time while it runs.
func TestWatchStopsPingsWhileTheCheckBlocks(t *testing.T) {
	l := newTestListener(t)
	n := mustOpen(t, l.path)
	wedge := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	running, most := 0, 0
	fails := make(chan error, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const timeout = 200 * time.Millisecond
	go n.Watch(ctx, timeout, func() error {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		defer func() { mu.Lock(); running--; mu.Unlock() }()
		select {
		case <-wedge:
			<-release
		default:
		}
		return nil
	}, func(err error) { fails <- err })
	pingTimes(t, l, 2, 5*time.Second)

	close(wedge)
	for range 2 { // the second failure comes a half interval after any last ping
		err := <-fails
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "health check still running after 100ms") {
			t.Fatalf("onFail got %v", err)
		}
	}
	l.drain()
	l.quiet(t, 3*timeout, "the check is wedged")
	mu.Lock()
	if most != 1 {
		t.Fatalf("%d checks ran at once, want 1", most)
	}
	mu.Unlock()

	close(release)
	pingTimes(t, l, 2, 5*time.Second)
}
