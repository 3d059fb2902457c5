package mqtt

import (
	"net"
)

// attach returns the connection, made again from fd when detached.
func (c *conn) attach() (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nc != nil {
		return c.nc, nil
	}
	if c.closing || c.fd < 0 {
		return nil, net.ErrClosed
	}
	nc, err := connFromFD(c.fd)
	if err != nil {
		return nil, err
	}
	c.nc = nc
	return nc, nil
}

// detachLocked lets a parked connection with no writer go, keeping fd;
// c.mu is held.
func (c *conn) detachLocked() {
	if c.nc == nil || c.writing || c.reading || c.closing || c.fd < 0 || !detachable(c.nc) {
		return
	}
	_ = c.nc.Close()
	c.nc = nil
}

// park hands the idle connection to the poller; it reports false when
// the connection is closing or the poller refuses it (the reader then
// goes on reading).
func (c *conn) park() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closing {
		return false
	}
	if err := c.srv.poller.arm(c, !c.registered); err != nil {
		c.srv.log.Debug("mqtt connection not parked", "client_id", c.clientID, "err", err)
		return false
	}
	c.registered, c.parked, c.reading = true, true, false
	c.srv.st.parks.Add(1)
	c.srv.st.parked.Add(1)
	c.srv.poller.keepAliveDue(c)
	c.detachLocked()
	return true
}

// detachable reports whether a parked connection may let nc go: a plain
// TCP connection may, a TLS one keeps its state in nc and parks attached.
// A TLS connection parks safely all the same: its reader parks only after
// a read timed out, and a TLS read that needs the socket has nothing
// decrypted left and at most part of a record buffered, so the rest of it
// wakes the poller.
func detachable(nc net.Conn) bool {
	_, ok := nc.(*net.TCPConn)
	return ok
}

// wakeRead starts a reader for a parked connection that has bytes to
// read (or was closed by the client); the poller calls it.
func (c *conn) wakeRead() {
	c.mu.Lock()
	if !c.parked || c.closing {
		c.mu.Unlock()
		return
	}
	c.parked, c.reading = false, true
	c.mu.Unlock()
	c.srv.st.parked.Add(-1)
	go c.readLoop()
}
