package leaftest

import (
	"bufio"
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// FakeHub is a scripted hub: a listener whose connections the test drives
// line by line, for cases a real nats-server cannot be made to show
// (echoing a loop-detection subject, ignoring PINGs, refusing every
// CONNECT). It speaks plain text only (no TLS, no compression).
type FakeHub struct {
	t     testing.TB
	ln    net.Listener
	conns chan net.Conn
}

// StartFakeHub listens on 127.0.0.1 and a free port; it closes in
// t.Cleanup.
func StartFakeHub(t testing.TB) *FakeHub {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("leaftest: %v", err)
	}
	f := &FakeHub{t: t, ln: ln, conns: make(chan net.Conn, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(f.conns)
				return
			}
			f.conns <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for c := range f.conns {
			_ = c.Close()
		}
	})
	return f
}

// URL is the fake hub's leafnode URL.
func (f *FakeHub) URL() string { return "nats-leaf://" + f.ln.Addr().String() }

// Accept waits for the next connection from the link.
func (f *FakeHub) Accept() *Conn {
	f.t.Helper()
	select {
	case c, ok := <-f.conns:
		if !ok {
			f.t.Fatal("leaftest: fake hub closed")
		}
		f.t.Cleanup(func() { _ = c.Close() })
		return NewConn(f.t, c)
	case <-time.After(Timeout):
		f.t.Fatalf("leaftest: no connection to the fake hub after %v", Timeout)
	}
	return nil
}

// Conn is one side of a leafnode connection driven by a test script.
type Conn struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
}

// NewConn wraps c for scripting.
func NewConn(t testing.TB, c net.Conn) *Conn {
	return &Conn{t: t, conn: c, r: bufio.NewReaderSize(c, 64<<10)}
}

// HubInfo is a leafnode INFO line as a nats-server hub sends it, with
// compression off and the given nonce.
func HubInfo(nonce string) string {
	return `INFO {"server_id":"FAKEHUB","server_name":"fake","version":"2.15.2","proto":3,"headers":true,` +
		`"auth_required":true,"max_payload":1048576,"client_id":7,"nonce":"` + nonce +
		`","compression":"off","info_on_connect":true,"leafnode_urls":[]}` + "\r\n"
}

// ConnectInfo is the INFO a hub sends once it accepts CONNECT.
const ConnectInfo = `INFO {"server_id":"FAKEHUB","server_name":"fake","version":"2.15.2","proto":3,"headers":true,` +
	`"max_payload":1048576,"client_id":7,"connect_info":true,"remote_account":"$G","info_on_connect":true}` + "\r\n"

// Send writes raw protocol text.
func (c *Conn) Send(s string) {
	c.t.Helper()
	_ = c.conn.SetWriteDeadline(time.Now().Add(Timeout))
	if _, err := c.conn.Write([]byte(s)); err != nil {
		c.t.Fatalf("leaftest: send %q: %v", s, err)
	}
}

// ReadLine returns the next line without its line ending.
func (c *Conn) ReadLine() string {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(Timeout))
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("leaftest: read line: %v (got %q)", err, line)
	}
	return strings.TrimRight(line, "\r\n")
}

// Expect reads lines until one starts with prefix, answering PINGs on the
// way (a link pings right after it registers), and returns it. Other lines
// fail the test.
func (c *Conn) Expect(prefix string) string {
	c.t.Helper()
	for {
		line := c.ReadLine()
		if strings.HasPrefix(line, prefix) {
			return line
		}
		if line == "PING" {
			c.Send("PONG\r\n")
			continue
		}
		c.t.Fatalf("leaftest: got %q, want prefix %q", line, prefix)
	}
}

// ExpectClosed waits until the link closes the connection, skipping what
// it sends meanwhile.
func (c *Conn) ExpectClosed(ctx context.Context) {
	c.t.Helper()
	deadline := time.Now().Add(Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = c.conn.SetReadDeadline(deadline)
	for {
		if _, err := c.r.ReadString('\n'); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				c.t.Fatalf("leaftest: connection still open")
			}
			return
		}
	}
}

// Handshake plays a hub's side of an accepted handshake without
// compression: INFO, read CONNECT, connect_info INFO. It returns the
// CONNECT line.
func (c *Conn) Handshake() string {
	c.t.Helper()
	c.Send(HubInfo("nonce-1"))
	connect := c.Expect("CONNECT ")
	c.Send(ConnectInfo)
	return connect
}

// Close closes the connection.
func (c *Conn) Close() { _ = c.conn.Close() }
