package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// linkProxy stands between a gateway and its hub's leafnode port: the
// gateway's remote URL names the proxy, which relays each connection to
// the hub and counts the bytes that cross it each way, after any
// compression, which is what a metered link bills. While it is down it
// accepts connections and closes them at once, as a hub that is
// unreachable would; setUp(true) lets the next attempt through.
type linkProxy struct {
	ln     net.Listener
	target string // target is the hub's leafnode address, host:port.

	up      atomic.Bool
	shape   atomic.Pointer[linkShape] // shape, when set, shapes the connections relayed (leafshape.go).
	toHub   atomic.Int64              // toHub counts bytes relayed gateway → hub.
	fromHub atomic.Int64              // fromHub counts bytes relayed hub → gateway.

	mu       sync.Mutex
	conns    map[net.Conn]struct{} // conns are the open connections of both ends.
	linkedAt time.Time             // linkedAt is when the first relayed connection was made.
	linked   chan struct{}         // linked is closed at linkedAt.
	closed   bool

	wg sync.WaitGroup
}

// newLinkProxy listens on a kernel-chosen loopback port and relays to
// target once up (it starts up when up is true).
func newLinkProxy(target string, up bool) (*linkProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("benchcmp: link proxy: %w", err)
	}
	p := &linkProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}, linked: make(chan struct{})}
	p.up.Store(up)
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// addr returns the proxy's listening address, host:port.
func (p *linkProxy) addr() string { return p.ln.Addr().String() }

// setUp lets connections through (true) or refuses new ones (false).
// Connections already relayed stay open either way.
func (p *linkProxy) setUp(up bool) { p.up.Store(up) }

// bytes returns the bytes relayed so far toward the hub and from it.
func (p *linkProxy) bytes() (toHub, fromHub int64) { return p.toHub.Load(), p.fromHub.Load() }

// linkedSince returns a channel closed once a connection has been
// relayed, and the time it was made (valid once the channel is closed).
func (p *linkProxy) linkedSince() (<-chan struct{}, func() time.Time) {
	return p.linked, func() time.Time {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.linkedAt
	}
}

// close stops listening, closes every connection and waits for the
// relaying goroutines to end.
func (p *linkProxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

// track records an open connection; it returns false, having closed c,
// when the proxy is closing.
func (p *linkProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

// untrack closes c and forgets it.
func (p *linkProxy) untrack(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *linkProxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient accept error; the gateway retries
		}
		if !p.up.Load() || !p.track(c) {
			c.Close()
			continue
		}
		p.wg.Add(1)
		go p.relay(c)
	}
}

// relay dials the hub for the gateway connection gw and copies both ways
// until either side closes.
func (p *linkProxy) relay(gw net.Conn) {
	defer p.wg.Done()
	defer p.untrack(gw)
	hub, err := net.DialTimeout("tcp", p.target, startTimeout)
	if err != nil || !p.track(hub) {
		if hub != nil {
			hub.Close()
		}
		return
	}
	defer p.untrack(hub)
	p.mu.Lock()
	if p.linkedAt.IsZero() {
		p.linkedAt = time.Now()
		close(p.linked)
	}
	p.mu.Unlock()

	done := make(chan struct{}, 2)
	copyFn := p.pipeFor()
	pipe := func(dst, src net.Conn, n *atomic.Int64) {
		copyFn(dst, src, n)
		// Either end closing ends the connection for both, as a broken
		// link would.
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(hub, gw, &p.toHub)
	go pipe(gw, hub, &p.fromHub)
	<-done
	<-done
}

// countingWriter adds the bytes written through it to n.
type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

// Write writes b to the underlying writer and counts what was written.
func (c countingWriter) Write(b []byte) (int, error) {
	k, err := c.w.Write(b)
	c.n.Add(int64(k))
	return k, err
}
