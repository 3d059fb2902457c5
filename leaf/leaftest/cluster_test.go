package leaftest

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// TestClusterKillRestart starts a 3-node cluster, kills one node and
// restarts it on the same ports with its store. (Whole-cluster restarts
// are exercised by the uplink fault tests in cmd/internal/app.)
func TestClusterKillRestart(t *testing.T) {
	start := time.Now()
	c := StartCluster(t, ClusterOptions{})
	t.Logf("cluster up in %v", time.Since(start))
	if len(c.LeafURLs()) != 3 || !strings.Contains(c.ClientURLs(), ",") {
		t.Fatalf("urls %q %q", c.LeafURLs(), c.ClientURLs())
	}
	n := c.Node("hub-2")
	if n == nil || n != c.Nodes[1] {
		t.Fatal("Node(hub-2) is not the second node")
	}
	port := n.LeafPort
	n.Kill()
	if n.Running() {
		t.Fatal("killed node still running")
	}
	start = time.Now()
	c.RestartAll()
	t.Logf("node back in %v", time.Since(start))
	if !n.Running() || n.LeafPort != port {
		t.Fatalf("restarted node: running %v, leaf port %d → %d", n.Running(), port, n.LeafPort)
	}
}

// TestProxyCutRestoreBlackhole forwards bytes through a proxy to an echo
// server, cuts, blackholes and restores it.
func TestProxyCutRestoreBlackhole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	p := StartProxy(t, ln.Addr().String())
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	echo := func(c net.Conn, msg string) error {
		if _, err := c.Write([]byte(msg)); err != nil {
			return err
		}
		buf := make([]byte, len(msg))
		_ = c.SetReadDeadline(time.Now().Add(Timeout))
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		if string(buf) != msg {
			t.Fatalf("echo %q, want %q", buf, msg)
		}
		return nil
	}
	c1 := dial()
	if err := echo(c1, "hello"); err != nil {
		t.Fatal(err)
	}
	// The counts follow the writes: await them.
	for deadline := time.Now().Add(Timeout); ; {
		up, down := p.Bytes()
		if up == 5 && down == 5 {
			break
		}
		if up > 5 || down > 5 || time.Now().After(deadline) {
			t.Fatalf("bytes forwarded %d up, %d down, want 5 and 5", up, down)
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	p.Cut()
	_ = c1.SetReadDeadline(time.Now().Add(Timeout))
	if _, err := c1.Read(make([]byte, 1)); err == nil {
		t.Fatal("read after cut succeeded")
	}
	c2 := dial() // accepted, then closed at once
	_ = c2.SetReadDeadline(time.Now().Add(Timeout))
	if _, err := c2.Read(make([]byte, 1)); err == nil {
		t.Fatal("read on a connection made while cut succeeded")
	}
	p.Restore()
	c3 := dial()
	if err := echo(c3, "again"); err != nil {
		t.Fatal(err)
	}
	p.Blackhole()
	if _, err := c3.Write([]byte("lost")); err != nil {
		t.Fatal(err)
	}
	_ = c3.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := c3.Read(make([]byte, 1)); err == nil {
		t.Fatal("a blackholed connection delivered bytes")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("blackholed read: %v, want a timeout", err)
	}
	p.Restore() // closes the blackholed connection
	_ = c3.SetReadDeadline(time.Now().Add(Timeout))
	if _, err := c3.Read(make([]byte, 1)); err == nil {
		t.Fatal("blackholed connection survived Restore")
	}
	if err := echo(dial(), "third"); err != nil {
		t.Fatal(err)
	}
	if p.Accepted() != 4 {
		t.Fatalf("accepted %d, want 4", p.Accepted())
	}
	t.Log(p)
}
