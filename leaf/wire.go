package leaf

import (
	"net"
	"sync/atomic"
)

// wireCounters count the bytes that crossed a link's sockets, every
// connection since Start, each way: what the network carried (after
// compression and TLS), which is what a metered uplink bills.
type wireCounters struct {
	in, out atomic.Int64
}

// countedConn is a socket whose reads and writes add to wire.
type countedConn struct {
	net.Conn
	wire *wireCounters
}

// Read reads from the socket and counts what it read.
func (c countedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.wire.in.Add(int64(n))
	return n, err
}

// Write writes to the socket and counts what it wrote.
func (c countedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.wire.out.Add(int64(n))
	return n, err
}
