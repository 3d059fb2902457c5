// Package leaftest gives leaf tests their hubs: a real nats-server hub
// started from the pinned binary (Hub), a 3-node JetStream cluster of them
// whose nodes can be killed and restarted (Cluster), a scripted fake hub
// for the cases a real one cannot show (FakeHub), and a TCP fault proxy to
// put between a gateway and a hub (Proxy: cut, blackhole, restore).
//
// All bind 127.0.0.1 on free ports, stop in t.Cleanup, and wait on
// events (the server's "Server is ready" and metadata-leader log lines,
// protocol lines), never on sleeps. A hub behind a Proxy should set
// leafnodes no_advertise (HubOptions.Leaf), or the hub tells the link its
// own leafnode URLs and the link fails over around the proxy.
package leaftest

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/tooltest"
)

// Timeout bounds every wait in this package.
const Timeout = 10 * time.Second

// HubOptions configures a real hub.
type HubOptions struct {
	// Name is the hub's server_name; "" is "hub".
	Name string
	// Leaf is extra configuration inside the leafnodes block, for example
	// `authorization { user: leaf, password: s3cret }` or
	// `compression: s2_fast`.
	Leaf string
	// Config is extra top-level configuration, for example an accounts
	// block.
	Config string
}

// Hub is a nats-server process used as a leafnode hub.
type Hub struct {
	t    testing.TB
	bin  string
	conf string

	// Name is the hub's server_name.
	Name string

	// ClientPort and LeafPort are the hub's ports; they stay the same
	// across Restart.
	ClientPort int
	LeafPort   int

	mu   sync.Mutex
	cmd  *exec.Cmd
	logs *logBuffer
	exit chan struct{}
}

// ClientURL is the URL for nats.go clients of the hub.
func (h *Hub) ClientURL() string { return fmt.Sprintf("nats://127.0.0.1:%d", h.ClientPort) }

// LeafURL is the URL a leaf link dials.
func (h *Hub) LeafURL() string { return fmt.Sprintf("nats-leaf://127.0.0.1:%d", h.LeafPort) }

// LeafURLWithUser is LeafURL with user info.
func (h *Hub) LeafURLWithUser(userinfo string) string {
	return fmt.Sprintf("nats-leaf://%s@127.0.0.1:%d", userinfo, h.LeafPort)
}

// Binary returns the path of the nats-server binary: the repository's
// .tools/bin/nats-server (installed by scripts/test), else the one on
// PATH. It fails the test if there is none.
func Binary(t testing.TB) string {
	t.Helper()
	return tooltest.NatsServer(t)
}

// StartHub starts a nats-server hub on 127.0.0.1 with random client and
// leafnode ports and returns once it logs that it is ready. It is killed
// in t.Cleanup.
func StartHub(t testing.TB, opts HubOptions) *Hub {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "hub"
	}
	h := &Hub{t: t, bin: Binary(t), Name: opts.Name}
	h.conf = filepath.Join(t.TempDir(), "hub.conf")
	h.writeConfig(opts, -1)
	t.Cleanup(h.Kill)
	h.start(-1)
	// Pin the ports so that a restart reuses them.
	h.writeConfig(opts, h.LeafPort)
	return h
}

// writeConfig writes the hub's configuration file with the leafnode port.
func (h *Hub) writeConfig(opts HubOptions, leafPort int) {
	conf := fmt.Sprintf("server_name: %q\n%s\nleafnodes {\n  listen: \"127.0.0.1:%d\"\n  %s\n}\n",
		opts.Name, opts.Config, leafPort, opts.Leaf)
	if err := os.WriteFile(h.conf, []byte(conf), 0o600); err != nil {
		h.t.Fatalf("leaftest: write hub config: %v", err)
	}
}

var (
	leafListenRE   = regexp.MustCompile(`Listening for leafnode connections on [^ ]*:(\d+)`)
	clientListenRE = regexp.MustCompile(`Listening for client connections on [^ ]*:(\d+)`)
)

// start runs the process and waits for "Server is ready", learning the
// ports from the log.
func (h *Hub) start(clientPort int) {
	h.t.Helper()
	cmd := exec.Command(h.bin, "-a", "127.0.0.1", "-p", strconv.Itoa(clientPort), "-c", h.conf)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		h.t.Fatalf("leaftest: %v", err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("leaftest: start nats-server: %v", err)
	}
	logs := &logBuffer{}
	exit := make(chan struct{})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			line := sc.Text()
			logs.add(line)
			if m := leafListenRE.FindStringSubmatch(line); m != nil {
				port, _ := strconv.Atoi(m[1])
				logs.setPort(&logs.leafPort, port)
			}
			if m := clientListenRE.FindStringSubmatch(line); m != nil {
				port, _ := strconv.Atoi(m[1])
				logs.setPort(&logs.clientPort, port)
			}
			if !signalled && strings.Contains(line, "Server is ready") {
				signalled = true
				close(ready)
			}
		}
		_ = cmd.Wait()
		close(exit)
	}()
	h.mu.Lock()
	h.cmd, h.logs, h.exit = cmd, logs, exit
	h.mu.Unlock()
	select {
	case <-ready:
	case <-exit:
		h.t.Fatalf("leaftest: nats-server exited before it was ready:\n%s", logs.String())
	case <-time.After(Timeout):
		h.t.Fatalf("leaftest: nats-server not ready after %v:\n%s", Timeout, logs.String())
	}
	h.ClientPort, h.LeafPort = logs.ports()
	if h.ClientPort == 0 || h.LeafPort == 0 {
		h.t.Fatalf("leaftest: no ports in the nats-server log:\n%s", logs.String())
	}
}

// Kill kills the hub process (SIGKILL) and waits for it to exit. It is
// idempotent.
func (h *Hub) Kill() {
	h.mu.Lock()
	cmd, exit := h.cmd, h.exit
	h.cmd = nil
	h.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exit
}

// Restart kills the hub if it runs and starts it again on the same ports.
func (h *Hub) Restart() {
	h.t.Helper()
	h.Kill()
	h.start(h.ClientPort)
}

// Logs returns the hub's log so far.
func (h *Hub) Logs() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.logs.String()
}

// logBuffer collects a process's log lines and the ports found in them.
type logBuffer struct {
	mu                   sync.Mutex
	lines                []string
	leafPort, clientPort int
	changed              chan struct{} // closed and replaced by add
}

func (b *logBuffer) add(line string) {
	b.mu.Lock()
	b.lines = append(b.lines, line)
	if b.changed != nil {
		close(b.changed)
		b.changed = nil
	}
	b.mu.Unlock()
}

func (b *logBuffer) setPort(p *int, port int) {
	b.mu.Lock()
	*p = port
	b.mu.Unlock()
}

func (b *logBuffer) ports() (client, leaf int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.clientPort, b.leafPort
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// FreePort returns a port that was free a moment ago, for configurations
// that must name one before starting. It is chosen at random below the
// kernel's ephemeral range (net.ipv4.ip_local_port_range) and probed with
// a listen: a port the kernel hands out itself (a 127.0.0.1:0 listen)
// comes from that range, where any outgoing connection of the test
// process may take it as its local port before the server binds it (a
// CI run lost a hub cluster's route port that way); below the range only
// another explicit bind can.
func FreePort(t testing.TB) int {
	t.Helper()
	low := ephemeralLow()
	for i := 0; low > 0 && i < 100; i++ {
		port := 10000 + rand.IntN(low-10000)
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken
		}
		_ = l.Close()
		return port
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("leaftest: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ephemeralLow is the first port of the kernel's ephemeral range, or 0
// where it cannot be read or leaves no room below it (FreePort then lets
// the kernel choose).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		if low, err := strconv.Atoi(f[0]); err == nil && low > 11000 {
			return low
		}
	}
	return 0
}
