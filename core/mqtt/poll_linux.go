//go:build linux

package mqtt

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// poller is an epoll set of parked connections' sockets, each armed for
// one event (EPOLLONESHOT): when bytes arrive, or the peer hangs up, the
// poller starts the connection's reader again.
type poller struct {
	srv   *Server
	epfd  int
	efd   int // an eventfd that ends run
	mu    sync.Mutex
	conns []*conn // by socket (fd): registered connections, nil where none
	quit  chan struct{}
	sweepState

	runDone, sweepDone chan struct{}
}

// newPoller starts the poller of srv and its keep alive sweeper.
func newPoller(srv *Server) (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		unix.Close(efd)
		unix.Close(epfd)
		return nil, err
	}
	p := &poller{srv: srv, epfd: epfd, efd: efd, quit: make(chan struct{}),
		runDone: make(chan struct{}), sweepDone: make(chan struct{})}
	p.kick = make(chan struct{}, 1)
	go p.run()
	go p.sweeper()
	return p, nil
}

// dupFD returns a descriptor of nc's socket of its own when nc is a TCP
// connection, plain or under TLS, else -1. It keeps the socket open when
// nc closes (a detached connection), and the poller waits on it.
func dupFD(nc net.Conn) int32 {
	if tc, ok := nc.(*tls.Conn); ok {
		nc = tc.NetConn()
	}
	tc, ok := nc.(*net.TCPConn)
	if !ok {
		return -1
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return -1
	}
	fd := -1
	if rc.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }) != nil || err != nil {
		return -1
	}
	return int32(fd)
}

// connFromFD makes a connection on the socket fd (a new descriptor of
// it: fd stays open when the connection closes).
func connFromFD(fd int32) (net.Conn, error) {
	tmp, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(tmp), "mqtt")
	nc, err := net.FileConn(f) // a descriptor of its own again
	_ = f.Close()
	return nc, err
}

// writeFD writes what the non-blocking socket fd takes of b now and
// returns the rest: what waits for the socket to drain, or all of b on
// an error (the connection's write then reports it).
func writeFD(fd int32, b []byte) []byte {
	for len(b) > 0 {
		n, err := unix.Write(int(fd), b)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			return b
		}
		b = b[n:]
	}
	return b
}

// peerAddr returns the address of the peer of the socket fd, nil when
// unknown.
func peerAddr(fd int32) net.Addr {
	if fd < 0 {
		return nil
	}
	sa, err := unix.Getpeername(int(fd))
	if err != nil {
		return nil
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return &net.TCPAddr{IP: net.IP(sa.Addr[:]).To16(), Port: sa.Port}
	case *unix.SockaddrInet6:
		return &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
	}
	return nil
}

// closeFD closes a descriptor of dupFD.
func closeFD(fd int32) { _ = unix.Close(int(fd)) }

// arm waits for one event on c's socket, adding it to the set first when
// add is set; c.mu is held.
func (p *poller) arm(c *conn, add bool) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: c.fd, Pad: int32(uint32(c.id))}
	if !add {
		return unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, int(c.fd), &ev)
	}
	p.mu.Lock()
	if n := int(c.fd) + 1; n > len(p.conns) {
		p.conns = append(p.conns, make([]*conn, n-len(p.conns))...)
	}
	p.conns[c.fd] = c
	p.mu.Unlock()
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, int(c.fd), &ev); err != nil {
		p.forget(c)
		return err
	}
	return nil
}

// remove takes c's socket out of the set; c.mu is held.
func (p *poller) remove(c *conn) {
	_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, int(c.fd), nil)
	p.forget(c)
}

func (p *poller) forget(c *conn) {
	p.mu.Lock()
	if int(c.fd) < len(p.conns) && p.conns[c.fd] == c {
		p.conns[c.fd] = nil
	}
	p.mu.Unlock()
}

// run waits for events until close. An event's data is the socket and
// the low half of the connection id, so a stale event for a socket
// number since reused wakes no one.
func (p *poller) run() {
	defer close(p.runDone)
	events := make([]unix.EpollEvent, 128)
	for {
		n, err := unix.EpollWait(p.epfd, events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			p.srv.log.Error("mqtt poller stopped", "err", err)
			return
		}
		for _, ev := range events[:n] {
			if ev.Fd == int32(p.efd) {
				return
			}
			var c *conn
			p.mu.Lock()
			if int(ev.Fd) < len(p.conns) {
				c = p.conns[ev.Fd]
			}
			p.mu.Unlock()
			if c != nil && uint32(c.id) == uint32(ev.Pad) {
				c.wakeRead()
			}
		}
	}
}

// close stops the poller once every connection has finished.
func (p *poller) close() {
	close(p.quit)
	one := [8]byte{1}
	_, _ = unix.Write(p.efd, one[:])
	<-p.runDone
	<-p.sweepDone
	unix.Close(p.efd)
	unix.Close(p.epfd)
}
