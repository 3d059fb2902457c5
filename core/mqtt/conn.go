package mqtt

import (
	"crypto/tls"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/auth"
)

// conn is one client network connection. It holds no goroutine of its
// own while idle: a reader goroutine runs while the client sends (the
// only code that reads nc and handles the client's packets) and, on a
// parkable connection, ends after Config.ParkAfter without a byte,
// leaving the socket in the Server's poller, which starts a new reader
// when bytes arrive; a writer goroutine runs while out holds bytes (the
// only code that writes nc, taking whatever out holds in one write). The
// connection ends (finish) once it is closing and neither runs.
type conn struct {
	srv *Server
	// nc is the connection. A parked connection with no writer lets it
	// go (detach): the Go runtime's descriptor, buffers and poller entry
	// are freed, fd keeps the socket, and a reader or a writer that
	// needs it makes a new one from fd (attach). Written under mu, by the
	// reader or the writer, never while the other uses it.
	nc     net.Conn
	remote netip.AddrPort // the client's address, when TCP
	id     uint64
	start  int64 // unix nanoseconds

	// Set by the reader during CONNECT, read-only after (info reads them
	// under mu once connected is set).
	clientID  string
	ident     *auth.Identity
	sess      *session
	will      *will
	aliases   map[uint16]string
	keepAlive time.Duration
	rs        *readState // the running reader's buffers; nil while parked

	clientMaxPacket  uint32
	clientReceiveMax uint16
	version          byte
	problemInfo      bool
	fd               int32       // a descriptor of the socket of its own, for the poller; -1: not parkable
	detachDue        atomic.Bool // parked, attached, no writer: the sweeper detaches it

	lastActivity      atomic.Int64
	inMsgs, inBytes   atomic.Int64
	outMsgs, outBytes atomic.Int64

	mu         sync.Mutex
	out        *writeBuf // bytes waiting for the writer; nil when none
	connected  bool
	closing    bool
	reading    bool // a reader goroutine runs
	writing    bool // a writer goroutine runs
	parked     bool // no reader: the poller waits for bytes
	registered bool // fd is in the poller's set
	finished   bool
	graceful   bool // DISCONNECT 0x00 received: no will (set by the reader)
}

func newConn(srv *Server, nc net.Conn, id uint64) *conn {
	now := time.Now().UnixNano()
	c := &conn{srv: srv, nc: nc, id: id, start: now, clientReceiveMax: 65535, fd: -1, reading: true}
	if ta, ok := nc.RemoteAddr().(*net.TCPAddr); ok {
		c.remote = ta.AddrPort()
	}
	if srv.poller != nil {
		c.fd = dupFD(nc)
	}
	c.lastActivity.Store(now)
	return c
}

func (c *conn) isClosing() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closing
}

// info describes the connection for monitoring.
func (c *conn) info() (ConnInfo, bool) {
	c.mu.Lock()
	ok := c.connected
	c.mu.Unlock()
	if !ok {
		return ConnInfo{}, false
	}
	i := ConnInfo{
		ID: c.id, ClientID: c.clientID, Version: c.version, Start: time.Unix(0, c.start),
		LastActivity: time.Unix(0, c.lastActivity.Load()), User: c.ident.User, Account: c.ident.Account,
		InMsgs: c.inMsgs.Load(), OutMsgs: c.outMsgs.Load(), InBytes: c.inBytes.Load(), OutBytes: c.outBytes.Load(),
	}
	c.mu.Lock()
	if c.out != nil {
		i.Pending = len(c.out.b)
	}
	i.Parked = c.parked
	nc := c.nc
	c.mu.Unlock()
	if c.remote.IsValid() {
		i.Remote = net.TCPAddrFromAddrPort(c.remote)
	} else if nc != nil {
		i.Remote = nc.RemoteAddr()
	}
	if s := c.sess; s != nil {
		s.mu.Lock()
		i.Subs = len(s.subs)
		s.mu.Unlock()
	}
	if tc, ok := nc.(*tls.Conn); ok {
		i.TLSVersion = tc.ConnectionState().Version
	}
	return i, true
}
