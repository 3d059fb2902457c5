//go:build unix

package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// notification is one datagram leafbox sent to the notify socket.
type notification struct {
	at   time.Time
	text string
}

// notifySocket is the unixgram socket systemd listens on for a Type=notify
// service (NOTIFY_SOCKET); it records every datagram.
type notifySocket struct {
	path string
	in   chan notification
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	// Socket paths are limited to 108 bytes: a short directory.
	dir, err := os.MkdirTemp("", "sd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	s := &notifySocket{path: path, in: make(chan notification, 4096)}
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 8192)
		for {
			n, err := conn.Read(buf)
			if err != nil {
				return
			}
			s.in <- notification{at: time.Now(), text: string(buf[:n])}
		}
	})
	t.Cleanup(func() { conn.Close(); wg.Wait() })
	return s
}

// await returns the first datagram for which match holds, passing over
// others (watchdog pings among status lines), within waitTimeout.
func (s *notifySocket) await(t *testing.T, p *proc, what string, match func(string) bool) notification {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		select {
		case n := <-s.in:
			if match(n.text) {
				return n
			}
		case <-deadline:
			t.Fatalf("no %s within %v; log:\n%s", what, waitTimeout, p.log())
		}
	}
}

const ping = "WATCHDOG=1"

func isPing(s string) bool { return s == ping }

// TestSystemdNotifyAndWatchdog runs `leafbox run` as systemd runs the
// packaged unit (Type=notify, WatchdogSec): no flags but the ports file,
// its configuration from the file $LEAFBOX_CONFIG names, NOTIFY_SOCKET and
// WATCHDOG_USEC set. READY=1 comes once it is ready for clients, with a
// STATUS= line naming the uplink's link and backlog; the STATUS follows
// the backlog; WATCHDOG=1 pings arrive every half timeout, stop while the
// store directory takes no writes and resume when it does; a reload is
// bracketed by RELOADING=1 and READY=1; SIGTERM brings STOPPING=1 and
// then no more pings.
func TestSystemdNotifyAndWatchdog(t *testing.T) {
	sock := newNotifySocket(t)
	dir := t.TempDir()
	store := filepath.Join(dir, "store")
	portsDir := filepath.Join(dir, "ports")
	for _, d := range []string{store, portsDir} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	// An uplink toward a hub that is not there: its backlog grows.
	conf := filepath.Join(dir, "leafbox.yaml")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf("listen: 127.0.0.1:-1\nhttp: 127.0.0.1:-1\njetstream: {store_dir: %q}\n"+
		"leafnodes: {remotes: [{url: 'nats-leaf://127.0.0.1:1'}]}\n"+
		"uplinks: [{name: tel, subjects: [tel.>], hub_subject_prefix: site1.}]\n", store)), 0o600); err != nil {
		t.Fatal(err)
	}
	const watchdog = 400 * time.Millisecond
	p := startEnv(t, []string{"LEAFBOX_CONFIG=" + conf, "NOTIFY_SOCKET=" + sock.path,
		fmt.Sprintf("WATCHDOG_USEC=%d", watchdog.Microseconds())},
		"run", "--ports-file-dir", portsDir)

	ready := sock.await(t, p, "READY=1", func(s string) bool { return strings.HasPrefix(s, "READY=1\n") })
	if want := "READY=1\nSTATUS=ready for clients; uplink tel: link "; !strings.HasPrefix(ready.text, want) ||
		!strings.Contains(ready.text, ", backlog 0 msgs 0B") {
		t.Fatalf("first notification %q, want %q... with the uplink's empty backlog", ready.text, want)
	}
	// READY=1 comes after Start returned: the ports file, written last
	// before "ready for clients", is there.
	pf, _ := p.waitPorts(portsDir)
	if entries, _ := os.ReadDir(portsDir); len(entries) != 1 {
		t.Fatalf("ports file missing when READY=1 arrived: %v", entries)
	}
	p.waitLog("notified the service manager")
	requireLogContains(t, p, "config="+conf+" ", "ready for clients", "watchdog="+watchdog.String())

	// Pings every half timeout.
	var pings []time.Time
	for len(pings) < 6 {
		pings = append(pings, sock.await(t, p, "a watchdog ping", isPing).at)
	}
	if span := pings[5].Sub(pings[0]); span < 5*watchdog/2*8/10 || span > 5*watchdog {
		t.Fatalf("6 pings over %v, want about %v (one every %v)", span, 5*watchdog/2, watchdog/2)
	}

	// The STATUS line follows the backlog.
	nc := natsConnect(t, loopbackURL(t, pf.Nats).String())
	for i := range 3 {
		require.NoError(t, nc.Publish("tel.temp", []byte(fmt.Sprint(i))))
	}
	require.NoError(t, nc.Flush())
	sock.await(t, p, "a STATUS with a backlog of 3", func(s string) bool {
		return strings.HasPrefix(s, "STATUS=ready for clients; uplink tel: link ") && strings.Contains(s, ", backlog 3 msgs ")
	})

	// The store directory stops taking writes (replaced by a file, as when
	// a card is remounted): the pings stop once the store probe runs
	// again (its success is reused for 10s).
	if err := os.RemoveAll(store); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(store, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	broken := time.Now()
	// (Wait for this reason: on a loaded machine a ping can also be
	// withheld for a health check that overran its time.)
	p.waitLog("store_dir " + store + " is not writable: not a directory")
	requireLogContains(t, p, "watchdog ping withheld")
	drainPings(sock)
	quietFor(t, sock, p, 3*watchdog, "the store takes no writes")
	t.Logf("pings stopped %v after the store broke", time.Since(broken).Round(100*time.Millisecond))

	// Repaired, the pings resume at once (a failed probe is not reused).
	if err := os.Remove(store); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{store, filepath.Join(store, "outbox")} {
		if err := os.Mkdir(d, 0o750); err != nil {
			t.Fatal(err)
		}
	}
	sock.await(t, p, "a ping after the repair", isPing)

	// systemctl reload (ExecReload=/bin/kill -HUP $MAINPID).
	p.signal(syscall.SIGHUP)
	sock.await(t, p, "RELOADING=1", func(s string) bool { return strings.HasPrefix(s, "RELOADING=1\n") })
	sock.await(t, p, "READY=1 after the reload", func(s string) bool {
		return strings.HasPrefix(s, "READY=1\nSTATUS=ready for clients; uplink tel: ")
	})
	p.waitLog("reload complete")

	p.signal(syscall.SIGTERM)
	stopping := sock.await(t, p, "STOPPING=1", func(s string) bool { return strings.HasPrefix(s, "STOPPING=1") })
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; log:\n%s", code, p.log())
	}
	for {
		select {
		case n := <-sock.in:
			if !n.at.After(stopping.at) {
				continue
			}
			t.Fatalf("%q arrived after STOPPING=1", n.text)
		default:
			return
		}
	}
}

func requireLogContains(t *testing.T, p *proc, wants ...string) {
	t.Helper()
	log := p.log()
	for _, w := range wants {
		if !strings.Contains(log, w) {
			t.Fatalf("log lacks %q:\n%s", w, log)
		}
	}
}

// drainPings discards what has arrived.
func drainPings(s *notifySocket) {
	for {
		select {
		case <-s.in:
		default:
			return
		}
	}
}

// quietFor fails t if a ping arrives within d.
func quietFor(t *testing.T, s *notifySocket, p *proc, d time.Duration, why string) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case n := <-s.in:
			if isPing(n.text) {
				t.Fatalf("%s, yet a ping arrived; log:\n%s", why, p.log())
			}
		case <-deadline:
			return
		}
	}
}

// TestSystemdNotifyLameDuck: SIGUSR2 sends STOPPING=1 with
// EXTEND_TIMEOUT_USEC covering the lame duck drain (grace period,
// duration, and the shutdown bound), so that systemd's TimeoutStopSec does
// not cut it short; the process then exits 0.
func TestSystemdNotifyLameDuck(t *testing.T) {
	sock := newNotifySocket(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "leafbox.yaml")
	if err := os.WriteFile(conf, []byte("listen: 127.0.0.1:-1\nhttp_port: 0\njetstream: false\n"+
		"lame_duck_duration: 2s\nlame_duck_grace_period: 1s\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startEnv(t, []string{"LEAFBOX_CONFIG=" + conf, "NOTIFY_SOCKET=" + sock.path}, "run")
	ready := sock.await(t, p, "READY=1", func(s string) bool { return strings.HasPrefix(s, "READY=1\n") })
	if ready.text != "READY=1\nSTATUS=ready for clients; no uplinks" {
		t.Fatalf("first notification %q", ready.text)
	}
	p.signal(syscall.SIGUSR2)
	stopping := sock.await(t, p, "STOPPING=1", func(s string) bool { return strings.HasPrefix(s, "STOPPING=1") })
	// 1s + 2s + the 10s shutdown bound.
	if want := "STOPPING=1\nSTATUS=shutting down\nEXTEND_TIMEOUT_USEC=13000000"; stopping.text != want {
		t.Fatalf("lame duck notification %q, want %q", stopping.text, want)
	}
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d after SIGUSR2; log:\n%s", code, p.log())
	}
	requireLogContains(t, p, "lame duck mode complete; stopped")
}
