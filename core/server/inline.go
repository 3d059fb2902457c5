package server

import (
	"errors"
	"net"
	"os"
	"syscall"
	"time"
)

// Inline writes: a goroutine that has just appended to a client's outbound
// buffer (a publisher's read loop at the end of a read batch that wrote to
// one other client, see flushPending; or an in-process publisher outside
// a burst, see flushInProcessLocked) may write the pending bytes itself instead of
// waking the client's writeLoop on another thread, which on a small
// machine costs more than the write. It does so only when no other
// goroutine is writing to the client (client.writing), and with one
// non-blocking write: what the socket does not take at once is left for
// writeLoop, which is woken as before and writes it under the write
// deadline. So a slow consumer never holds up its publisher, and the
// slow-consumer cut-offs (MaxPending, WriteDeadline) stay with writeLoop
// and deliver. One writer at a time takes the whole buffer, and an
// unwritten rest goes back in front of what was queued meanwhile, so the
// bytes of one client stay in order.

// initRawLocked prepares inline writes for a plain TCP connection; other
// connections (TLS) are written by writeLoop only. Called with c.mu held.
func (c *client) initRawLocked() {
	c.raw = nil
	tc, ok := c.conn.(*net.TCPConn)
	if !ok {
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	c.raw = raw
	c.rawWrite = c.writeOnce
}

// writeOnce is the syscall.RawConn callback of an inline write: one
// non-blocking write of c.rawBuf. It never asks to wait for the socket.
func (c *client) writeOnce(fd uintptr) bool {
	for {
		n, err := syscall.Write(int(fd), c.rawBuf)
		if err == syscall.EINTR {
			continue
		}
		c.rawN = max(n, 0)
		return true
	}
}

// noteWriteLocked records a write that began at start and just ended.
func (c *client) noteWriteLocked(start time.Time) {
	end := time.Since(c.start)
	c.lastWriteDur = end - start.Sub(c.start)
	c.lastWrite = end
}

// flushInProcessLocked flushes c after an in-process publisher appended a
// message. An in-process publisher has no batch end to flush at, so it
// writes each message inline while the socket is mostly idle (one message
// at a time, where waking writeLoop would cost more than the write); when
// messages come faster than the last write took, they are a burst, left
// to writeLoop so that one write carries many; until writeLoop has taken
// them (wakePending), later messages join them. Called with c.mu held,
// which it may release and take again.
func (c *client) flushInProcessLocked() {
	if c.writing || c.wakePending {
		return // the writer in progress, or woken, writes it next
	}
	if time.Since(c.start)-c.lastWrite < c.lastWriteDur {
		c.wakePending = true
		c.cond.Signal()
		return
	}
	c.flushInlineLocked()
}

// flushInlineLocked writes c's pending output on the calling goroutine
// when nothing else is writing to c, and wakes writeLoop for whatever is
// left. It is called with c.mu held, releases it during the write, and
// returns with it held.
func (c *client) flushInlineLocked() {
	if c.writing || c.closing || c.raw == nil || len(c.out) == 0 {
		// A writer in progress writes what was appended when it is done.
		if !c.writing {
			c.cond.Signal()
		}
		return
	}
	buf := c.out
	c.out = c.spare[:0]
	c.spare = nil
	c.writing = true
	c.wakePending = false
	c.inFlight = len(buf)
	c.rawBuf, c.rawN = buf, 0
	raw, conn := c.raw, c.conn
	c.mu.Unlock()
	start := time.Now()
	err := raw.Write(c.rawWrite)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// writeLoop's last deadline has passed since: clear it (writeLoop
		// sets its own before each write) and try once more.
		_ = conn.SetWriteDeadline(time.Time{})
		_ = raw.Write(c.rawWrite)
	}
	c.mu.Lock()
	n := c.rawN
	c.rawBuf = nil
	c.writing = false
	c.noteWriteLocked(start)
	c.inFlight = 0
	if n < len(buf) {
		// The rest goes first, before what was queued during the write.
		rest := copy(buf, buf[n:])
		queued := c.out
		c.out = append(buf[:rest], queued...)
		if cap(queued) <= maxSpareOutbound {
			c.spare = queued[:0]
		}
	} else if cap(buf) <= maxSpareOutbound || (cap(buf) <= maxKeptOutbound && len(buf) >= cap(buf)/4) {
		c.spare = buf[:0]
	}
	if c.stall != nil && int64(len(c.out)) < c.stallAt {
		close(c.stall)
		c.stall = nil
	}
	if len(c.out) > 0 || c.closing {
		c.cond.Signal()
	}
}
