package mqtt

import (
	"crypto/tls"
	"net"
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
	// reader or the writer, never while the other uses it. A TLS
	// connection's is never let go: it holds the TLS state.
	nc    net.Conn
	id    uint64
	start int64 // unix nanoseconds

	// Set by the reader during CONNECT, read-only after (info reads them
	// under mu once connected is set), except x's aliases, which only the
	// reader uses.
	clientID  string
	ident     *auth.Identity
	sess      *session
	x         *connMore // nil for a client with no will, no topic alias and no limits of its own
	keepAlive time.Duration

	lastActivity atomic.Int64
	ctr          atomic.Pointer[connCounters] // nil until the first message

	mu  sync.Mutex
	out *writeBuf // bytes waiting for the writer; nil when none

	fd          int32 // a descriptor of the socket of its own, for the poller; -1: not parkable
	idx         int32 // the connection's place in Server.conns (under Server.mu)
	version     byte
	problemInfo bool
	// Under mu.
	connected   bool
	closing     bool
	reading     bool // a reader goroutine runs
	writing     bool // a writer goroutine runs
	parked      bool // no reader: the poller waits for bytes
	registered  bool // fd is in the poller's set
	finished    bool
	graceful    bool // DISCONNECT 0x00 received: no will (set by the reader)
	detachQueue bool // in the poller's list of connections to detach
}

// connMore is what few idle connections need: set during CONNECT (for an
// MQTT 5 client always, so that its reader can add topic aliases).
type connMore struct {
	will             *will
	aliases          map[uint16]string
	clientMaxPacket  uint32 // 0: none
	clientReceiveMax uint16
}

// connCounters are a connection's message counters, made on its first
// message.
type connCounters struct {
	inMsgs, inBytes   atomic.Int64
	outMsgs, outBytes atomic.Int64
}

// counters returns the connection's counters, made on first use.
func (c *conn) counters() *connCounters {
	if p := c.ctr.Load(); p != nil {
		return p
	}
	c.ctr.CompareAndSwap(nil, &connCounters{})
	return c.ctr.Load()
}

// more returns the connection's connMore, made on first use; only the
// reader calls it, during CONNECT.
func (c *conn) more() *connMore {
	if c.x == nil {
		c.x = &connMore{clientReceiveMax: 65535}
	}
	return c.x
}

// receiveMax is the client's receive maximum.
func (c *conn) receiveMax() uint16 {
	if c.x == nil {
		return 65535
	}
	return c.x.clientReceiveMax
}

// maxPacket is the client's maximum packet size (0: none).
func (c *conn) maxPacket() uint32 {
	if c.x == nil {
		return 0
	}
	return c.x.clientMaxPacket
}

// will is the connection's will, nil when none.
func (c *conn) will() *will {
	if c.x == nil {
		return nil
	}
	return c.x.will
}

func newConn(srv *Server, nc net.Conn, id uint64) *conn {
	now := time.Now().UnixNano()
	c := &conn{srv: srv, nc: nc, id: id, start: now, fd: -1, reading: true}
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
	}
	if ctr := c.ctr.Load(); ctr != nil {
		i.InMsgs, i.OutMsgs, i.InBytes, i.OutBytes = ctr.inMsgs.Load(), ctr.outMsgs.Load(), ctr.inBytes.Load(), ctr.outBytes.Load()
	}
	c.mu.Lock()
	if c.out != nil {
		i.Pending = len(c.out.b)
	}
	i.Parked = c.parked
	nc := c.nc
	i.Attached = nc != nil
	c.mu.Unlock()
	if nc != nil {
		i.Remote = nc.RemoteAddr()
	} else {
		i.Remote = peerAddr(c.fd)
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
