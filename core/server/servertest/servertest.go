// Package servertest starts leafbox servers for tests and speaks the raw
// client protocol to them.
//
// Start binds 127.0.0.1 on a free port and shuts the server down in
// t.Cleanup. Conn reads with deadlines, so a test waits on protocol
// events, never on sleeps.
package servertest

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/server"
)

// Timeout bounds every wait in this package.
const Timeout = 10 * time.Second

// Start runs a server with opts on 127.0.0.1 and a free port. Host and
// Port in opts are overridden.
func Start(t testing.TB, opts server.Options) *server.Server {
	t.Helper()
	opts.Host = "127.0.0.1"
	opts.Port = server.RandomPort
	s, err := server.New(opts)
	if err != nil {
		t.Fatalf("servertest: new server: %v", err)
	}
	if err := s.Start(); err != nil {
		t.Fatalf("servertest: start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("servertest: shutdown: %v", err)
		}
	})
	return s
}

// Conn is a raw protocol connection to a server.
type Conn struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
}

// Dial opens a raw connection to s; it is closed in t.Cleanup.
func Dial(t testing.TB, s *server.Server) *Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr().String(), Timeout)
	if err != nil {
		t.Fatalf("servertest: dial: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return &Conn{t: t, conn: conn, r: bufio.NewReaderSize(conn, 64<<10)}
}

// Send writes raw protocol bytes.
func (c *Conn) Send(s string) {
	c.t.Helper()
	_ = c.conn.SetWriteDeadline(time.Now().Add(Timeout))
	if _, err := c.conn.Write([]byte(s)); err != nil {
		c.t.Fatalf("servertest: send %q: %v", s, err)
	}
}

// ReadLine returns the next line without its CRLF.
func (c *Conn) ReadLine() string {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(Timeout))
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("servertest: read line: %v (got %q)", err, line)
	}
	return strings.TrimRight(line, "\r\n")
}

// Expect reads the next line and fails unless it starts with prefix. It
// returns the line.
func (c *Conn) Expect(prefix string) string {
	c.t.Helper()
	line := c.ReadLine()
	if !strings.HasPrefix(line, prefix) {
		c.t.Fatalf("servertest: got %q, want prefix %q", line, prefix)
	}
	return line
}

// Connect reads INFO, sends CONNECT with the given JSON and a PING, and
// waits for the PONG.
func (c *Conn) Connect(connectJSON string) {
	c.t.Helper()
	c.Expect("INFO ")
	c.Send("CONNECT " + connectJSON + "\r\nPING\r\n")
	c.Expect("PONG")
}

// ExpectClosed waits until the server closes the connection.
func (c *Conn) ExpectClosed() {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(Timeout))
	for {
		if _, err := c.r.ReadString('\n'); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				c.t.Fatalf("servertest: connection still open after %v", Timeout)
			}
			return
		}
	}
}

// Close closes the connection.
func (c *Conn) Close() { _ = c.conn.Close() }
