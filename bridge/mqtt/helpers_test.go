package mqtt

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/store/jetstream"
)

// mosquitto is a Mosquitto broker run by a test on 127.0.0.1.
type mosquitto struct {
	t    testing.TB
	port int
	dir  string
	conf string
	cmd  *exec.Cmd
	done chan struct{}
}

// mosquittoPath is the broker binary: on PATH or Debian's /usr/sbin.
func mosquittoPath(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/mosquitto"); err == nil {
		return "/usr/sbin/mosquitto"
	}
	t.Fatal("mosquitto is not installed (Debian package mosquitto; scripts/test installs it)")
	return ""
}

// freePort returns a port free on 127.0.0.1 now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startMosquitto starts a broker with persistence (so a restart keeps
// sessions and queued messages) and the extra config lines; it is killed
// in t.Cleanup.
func startMosquitto(t testing.TB, extra ...string) *mosquitto {
	t.Helper()
	m := &mosquitto{t: t, port: freePort(t), dir: t.TempDir()}
	m.conf = filepath.Join(m.dir, "mosquitto.conf")
	lines := []string{
		fmt.Sprintf("listener %d 127.0.0.1", m.port),
		"allow_anonymous true",
		"persistence true",
		"persistence_location " + m.dir + "/",
		"max_queued_messages 100000",
		"log_dest stderr",
		"log_type error",
		"log_type warning",
	}
	if os.Getuid() == 0 {
		lines = append(lines, "user root") // else it drops to user mosquitto, who cannot write m.dir
	}
	lines = append(lines, extra...)
	if err := os.WriteFile(m.conf, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m.start()
	t.Cleanup(func() {
		if m.cmd != nil {
			_ = m.cmd.Process.Kill()
			<-m.done
		}
	})
	return m
}

// start runs the broker and waits until it accepts connections.
func (m *mosquitto) start() {
	t := m.t
	t.Helper()
	m.cmd = exec.Command(mosquittoPath(t), "-c", m.conf)
	m.cmd.Stderr = &testWriter{t: t, prefix: "mosquitto: "}
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	m.done = make(chan struct{})
	go func() { _ = m.cmd.Wait(); close(m.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", m.addr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-m.done:
			t.Fatalf("mosquitto exited: %v", m.cmd.ProcessState)
		case <-time.After(10 * time.Millisecond): // the broker's listener gives no other signal
		}
		if time.Now().After(deadline) {
			t.Fatalf("mosquitto does not listen on %s: %v", m.addr(), err)
		}
	}
}

// stop stops the broker with SIGTERM (it saves its persistence file) and
// waits for it to exit.
func (m *mosquitto) stop() {
	m.t.Helper()
	_ = m.cmd.Process.Signal(os.Interrupt)
	<-m.done
	m.cmd = nil
}

func (m *mosquitto) addr() string { return "127.0.0.1:" + strconv.Itoa(m.port) }
func (m *mosquitto) url() string  { return "mqtt://" + m.addr() }

// testWriter logs a process's output through t.
type testWriter struct {
	t      testing.TB
	prefix string
	mu     sync.Mutex
}

func (w *testWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t.Logf("%s%s", w.prefix, strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// testBroker is a leafbox server with JetStream and a nats.go client.
type testBroker struct {
	srv *server.Server
	nc  *nats.Conn
	js  njs.JetStream
	bus *testBus
}

// newTestBroker starts a server and a JetStream engine on a temporary
// directory.
func newTestBroker(t testing.TB) *testBroker {
	t.Helper()
	srv := servertest.Start(t, server.Options{})
	conn := srv.InProcess("")
	eng, err := jetstream.New(jetstream.Config{StoreDir: t.TempDir()}, engineBus{conn})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := eng.Close(); err != nil {
			t.Errorf("close engine: %v", err)
		}
		conn.Close()
	})
	nc, err := nats.Connect(srv.ClientURL(), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := njs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	bus := &testBus{c: srv.InProcess("")}
	t.Cleanup(bus.c.Close)
	return &testBroker{srv: srv, nc: nc, js: js, bus: bus}
}

// addStream creates a file stream capturing subjects.
func (b *testBroker) addStream(t testing.TB, name string, subjects ...string) njs.Stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := b.js.CreateStream(ctx, njs.StreamConfig{Name: name, Subjects: subjects, Storage: njs.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// engineBus adapts the in-process connection to jetstream.Bus.
type engineBus struct{ c *server.Conn }

func (b engineBus) Subscribe(subj, queue string, h func(subject, reply, hdr, data []byte)) (func(), error) {
	sub, err := b.c.Subscribe(subj, queue, func(m server.Msg) { h(m.Subject, m.Reply, m.Header, m.Data) })
	if err != nil {
		return nil, err
	}
	return sub.Unsubscribe, nil
}
func (b engineBus) Publish(subj, reply string, hdr, data []byte) int {
	return b.c.Publish(subj, reply, hdr, data)
}
func (b engineBus) PublishAs(route, shown, reply string, hdr, data []byte) int {
	return b.c.PublishAs(route, shown, reply, hdr, data)
}
func (b engineBus) HasInterest(subj string) bool { return b.c.HasInterest(subj) }

// testBus adapts the in-process connection to bridge.Bus, as the
// composition root does.
type testBus struct {
	c      *server.Conn
	inboxN atomic.Uint64
}

func (b *testBus) Publish(subj, reply string, hdr, data []byte) error {
	b.c.Publish(subj, reply, hdr, data)
	return nil
}

func (b *testBus) Subscribe(subj, queue string, h func(bridge.Msg)) (func(), error) {
	sub, err := b.c.Subscribe(subj, queue, func(m server.Msg) {
		h(bridge.Msg{Subject: m.Subject, Reply: m.Reply, Header: m.Header, Data: m.Data})
	})
	if err != nil {
		return nil, err
	}
	return sub.Unsubscribe, nil
}

func (b *testBus) Request(ctx context.Context, subj string, hdr, data []byte) (bridge.Msg, error) {
	inbox := fmt.Sprintf("_INBOX.bridgetest.%d", b.inboxN.Add(1))
	ch := make(chan bridge.Msg, 1)
	sub, err := b.c.Subscribe(inbox, "", func(m server.Msg) {
		msg := bridge.Msg{Subject: clone(m.Subject), Header: clone(m.Header), Data: clone(m.Data)}
		select {
		case ch <- msg:
		default:
		}
	})
	if err != nil {
		return bridge.Msg{}, err
	}
	defer sub.Unsubscribe()
	if b.c.Publish(subj, inbox, hdr, data) == 0 {
		// No responders, as a NATS server reports them.
		return bridge.Msg{Header: []byte("NATS/1.0 503\r\n\r\n")}, nil
	}
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		return bridge.Msg{}, ctx.Err()
	}
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// logWatch is a slog.Handler that counts records by message and lets a
// test wait for the n-th one.
type logWatch struct {
	t  testing.TB
	mu sync.Mutex
	n  map[string]int
	ch chan struct{} // closed and replaced on every record
}

func newLogWatch(t testing.TB) *logWatch {
	return &logWatch{t: t, n: map[string]int{}, ch: make(chan struct{})}
}

func (w *logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w *logWatch) Handle(_ context.Context, r slog.Record) error {
	var attrs []string
	r.Attrs(func(a slog.Attr) bool { attrs = append(attrs, a.String()); return true })
	w.t.Logf("bridge: %s %s %s", r.Level, r.Message, strings.Join(attrs, " "))
	w.mu.Lock()
	w.n[r.Message]++
	close(w.ch)
	w.ch = make(chan struct{})
	w.mu.Unlock()
	return nil
}
func (w *logWatch) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *logWatch) WithGroup(string) slog.Handler      { return w }

// wait waits until msg was logged at least n times.
func (w *logWatch) wait(msg string, n int) {
	w.t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		w.mu.Lock()
		got, ch := w.n[msg], w.ch
		w.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			w.t.Fatalf("%q logged %d times, want %d", msg, got, n)
		}
	}
}

// runBridge runs a bridge with cfg on bus until the test ends; it waits
// for the first connection.
func runBridge(t testing.TB, cfg Config, bus bridge.Bus) (*bridge.Status, *logWatch) {
	t.Helper()
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := &bridge.Status{}
	lw := newLogWatch(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx, bridge.Env{Bus: bus, Status: st, Logger: slog.New(lw)}) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	lw.wait("mqtt bridge connected", 1)
	return st, lw
}

// eventually waits until cond holds, checking it every few milliseconds:
// for counters, which signal nothing when they change.
func eventually(t testing.TB, what string, cond func() bool, state ...func() string) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-timeout:
			var got []string
			for _, f := range state {
				got = append(got, f())
			}
			t.Fatalf("timed out waiting for %s %s", what, strings.Join(got, ", "))
		}
	}
}

// newTestLogger logs through t.
func newTestLogger(t testing.TB) *slog.Logger { return slog.New(newLogWatch(t)) }
