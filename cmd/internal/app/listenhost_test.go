package app

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
)

// leafbox run --addr 127.0.0.1 --leaf-port -1 accepts leafs on loopback
// only (it listened on [::] before).
func TestLeafPortListensOnTheClientHost(t *testing.T) {
	c := mustParse(t, "http_port: 0\njetstream: false\n")
	Overrides{Host: ptr("127.0.0.1"), Port: ptr(-1), LeafPort: ptr(-1)}.Apply(c)
	c.SetDefaults(testEnv)
	a := startConfig(t, c, Flags{})
	addr := a.LeafListener().Addr().(*net.TCPAddr)
	if !addr.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("leafnode listener on %v, want 127.0.0.1", addr)
	}
}

// logBuffer collects log output from concurrent goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// An accepted-leaf listener without authorization warns at start.
func TestLeafListenWithoutAuthorizationWarns(t *testing.T) {
	const warning = "leafnode listener has no authorization"
	start := func(t *testing.T, src string) string {
		t.Helper()
		var logs logBuffer
		c := loopbackConfig(t, "http_port: 0\njetstream: false\n"+src, testEnv)
		startConfig(t, c, Flags{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		return logs.String()
	}
	out := start(t, "leafnodes: {listen: '127.0.0.1:-1'}\n")
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, warning) {
		t.Fatalf("no warning at start:\n%s", out)
	}
	out = start(t, "leafnodes: {listen: '127.0.0.1:-1', authorization: {user: leaf, password: s3cret}}\n")
	if strings.Contains(out, warning) {
		t.Fatalf("warned although authorization is set:\n%s", out)
	}
}
