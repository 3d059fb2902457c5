package app

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
)

// A listener given only a port follows the client listener's host; its
// own host wins.
func TestLeafListenFollowsTheClientHost(t *testing.T) {
	cases := []struct {
		name string
		src  string
		o    Overrides
		want string
	}{
		{"--addr and --leaf-port", "", Overrides{Host: ptr("127.0.0.1"), LeafPort: ptr(7422)}, "127.0.0.1:7422"},
		{"listen and a bare port", "listen: 10.1.2.3:4222\nleafnodes: {listen: 7000}\n", Overrides{}, "10.1.2.3:7000"},
		{"ipv6 client host", "listen: '[::1]:4222'\nleafnodes: {listen: 7000}\n", Overrides{}, "[::1]:7000"},
		{"default client host", "", Overrides{LeafPort: ptr(7422)}, "0.0.0.0:7422"},
		{"own host wins", "leafnodes: {listen: '0.0.0.0:7000'}\n", Overrides{Host: ptr("127.0.0.1")}, "0.0.0.0:7000"},
		{"own host, default port", "leafnodes: {listen: 192.168.1.1}\n", Overrides{Host: ptr("127.0.0.1")}, "192.168.1.1:7422"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.src)
			tc.o.Apply(c)
			c.SetDefaults(testEnv)
			requireEqual(t, c.LeafListenAddr(), tc.want)
		})
	}
}

// leafbox run --addr 127.0.0.1 --leaf-port -1 accepts leafs on loopback
// only (it listened on [::] before).
func TestLeafPortListensOnTheClientHost(t *testing.T) {
	c := mustParse(t, "http_port: 0\njetstream: false\n")
	Overrides{Host: ptr("127.0.0.1"), Port: ptr(-1), LeafPort: ptr(-1)}.Apply(c)
	c.SetDefaults(testEnv)
	a := startConfig(t, c, Flags{})
	addr := a.listener.Addr().(*net.TCPAddr)
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
