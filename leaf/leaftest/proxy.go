package leaftest

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// ProxyMode is what a Proxy does with connections and their bytes.
type ProxyMode int

// Proxy modes.
const (
	// ProxyUp forwards connections and bytes both ways.
	ProxyUp ProxyMode = iota
	// ProxyCut has closed every connection and closes new ones as soon as
	// it accepts them, as a peer whose port is refused would.
	ProxyCut
	// ProxyBlackhole keeps connections open but drops every byte, both
	// ways, as a network that silently loses packets would: only a
	// peer's stale-connection detection (PING timeouts) ends them.
	ProxyBlackhole
)

// String returns the mode's name.
func (m ProxyMode) String() string {
	switch m {
	case ProxyUp:
		return "up"
	case ProxyCut:
		return "cut"
	case ProxyBlackhole:
		return "blackhole"
	}
	return "unknown"
}

// Proxy is a TCP fault proxy between a leaf link and a hub: it listens on
// 127.0.0.1 on a free port and forwards each connection to its target,
// until Cut or Blackhole fault it. Restore makes it forward again. It
// counts the bytes it forwarded and the connections it accepted.
//
// A connection that was blackholed lost bytes in the middle of its
// stream, so it is never forwarded again: Restore closes it, and the peer
// reconnects. The listener stays open through every fault, so the port is
// never taken by someone else. Proxy is safe for concurrent use; it is
// closed in t.Cleanup.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	mode   ProxyMode
	conns  map[*proxyConn]struct{}
	closed bool

	accepted            atomic.Int64
	bytesUp, bytesDown  atomic.Int64
	acceptDone, closing chan struct{}
	wg                  sync.WaitGroup
}

// proxyConn is one forwarded connection: client is the accepted side,
// server the side dialled to the target.
type proxyConn struct {
	client, server net.Conn
	dropping       atomic.Bool // blackholed: bytes are read and dropped
	closeOnce      sync.Once
}

func (c *proxyConn) close() {
	c.closeOnce.Do(func() {
		c.client.Close()
		c.server.Close()
	})
}

// StartProxy starts a Proxy toward target (host:port) in mode ProxyUp.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("leaftest: proxy listen: %v", err)
	}
	p := &Proxy{
		ln:         ln,
		target:     target,
		conns:      map[*proxyConn]struct{}{},
		acceptDone: make(chan struct{}),
		closing:    make(chan struct{}),
	}
	go p.acceptLoop()
	t.Cleanup(p.Close)
	return p
}

// Addr is the proxy's listening address (127.0.0.1:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Port is the proxy's listening port.
func (p *Proxy) Port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// LeafURL is the URL a leaf link dials to reach the target through the
// proxy.
func (p *Proxy) LeafURL() string { return "nats-leaf://" + p.Addr() }

// Mode returns the current mode.
func (p *Proxy) Mode() ProxyMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// Cut closes every connection and closes new ones at once until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.mode = ProxyCut
	conns := p.takeConnsLocked()
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// Blackhole keeps every connection open but drops their bytes, and does
// the same with new connections, until Restore.
func (p *Proxy) Blackhole() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = ProxyBlackhole
	for c := range p.conns {
		c.dropping.Store(true)
	}
}

// Restore makes the proxy forward new connections again. Connections that
// were blackholed are closed: their streams lost bytes.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.mode = ProxyUp
	var dead []*proxyConn
	for c := range p.conns {
		if c.dropping.Load() {
			dead = append(dead, c)
			delete(p.conns, c)
		}
	}
	p.mu.Unlock()
	for _, c := range dead {
		c.close()
	}
}

// Accepted returns how many connections the proxy has accepted, faulted
// ones included.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Conns returns how many connections are open through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Bytes returns the bytes forwarded toward the target (up) and back
// (down); dropped bytes are not counted.
func (p *Proxy) Bytes() (up, down int64) { return p.bytesUp.Load(), p.bytesDown.Load() }

// Close stops the proxy and closes every connection. It is idempotent.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.closing)
	conns := p.takeConnsLocked()
	p.mu.Unlock()
	p.ln.Close()
	<-p.acceptDone
	for _, c := range conns {
		c.close()
	}
	p.wg.Wait()
}

// takeConnsLocked empties the connection set and returns what it held.
func (p *Proxy) takeConnsLocked() []*proxyConn {
	out := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		out = append(out, c)
	}
	clear(p.conns)
	return out
}

func (p *Proxy) acceptLoop() {
	defer close(p.acceptDone)
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.accepted.Add(1)
		p.mu.Lock()
		mode, closed := p.mode, p.closed
		p.mu.Unlock()
		if closed || mode == ProxyCut {
			client.Close()
			continue
		}
		p.wg.Add(1)
		go p.serve(client)
	}
}

// serve dials the target for client and forwards until either side ends
// or a fault closes the connection.
func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	var d net.Dialer
	server, err := d.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	c := &proxyConn{client: client, server: server}
	p.mu.Lock()
	switch {
	case p.closed || p.mode == ProxyCut:
		p.mu.Unlock()
		c.close()
		return
	case p.mode == ProxyBlackhole:
		c.dropping.Store(true)
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()

	done := make(chan struct{}, 2)
	go func() { p.pipe(c, server, client, &p.bytesUp); done <- struct{}{} }()
	go func() { p.pipe(c, client, server, &p.bytesDown); done <- struct{}{} }()
	<-done
	c.close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

// pipe copies from src to dst until an error, dropping what it reads while
// c is blackholed, and counts the bytes it wrote.
func (p *Proxy) pipe(c *proxyConn, dst, src net.Conn, count *atomic.Int64) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !c.dropping.Load() {
			w, werr := dst.Write(buf[:n])
			count.Add(int64(w))
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// String describes the proxy for test logs.
func (p *Proxy) String() string {
	up, down := p.Bytes()
	return fmt.Sprintf("proxy %s→%s %s: %d conns open, %d accepted, %d B up, %d B down",
		p.Addr(), p.target, p.Mode(), p.Conns(), p.Accepted(), up, down)
}
