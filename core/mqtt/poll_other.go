//go:build !linux

package mqtt

import (
	"errors"
	"net"
	"sync"
)

// poller is a stand-in off Linux, where connections do not park: each
// keeps its reader goroutine, as before parking existed.
type poller struct {
	mu        sync.Mutex
	conns     []*conn
	quit      chan struct{}
	sweepDone chan struct{}
	sweepState
}

func newPoller(*Server) (*poller, error) {
	return nil, errors.New("parking needs epoll (Linux)")
}

func dupFD(net.Conn) int32 { return -1 }

func connFromFD(int32) (net.Conn, error) { return nil, errors.New("parking needs epoll (Linux)") }

func writeFD(_ int32, b []byte) []byte { return b }

func closeFD(int32) {}

func peerAddr(int32) net.Addr { return nil }

func (p *poller) arm(*conn, bool) error { return errors.New("parking needs epoll (Linux)") }

func (p *poller) remove(*conn) {}

func (p *poller) close() {}
