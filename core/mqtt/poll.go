package mqtt

import "time"

// sweepEvery bounds how often the sweeper runs: a parked connection is
// cut at most this long after 1.5 times its keep alive has passed without
// a byte from it, and a parked connection a writer left attached is
// detached this long after.
const sweepEvery = 250 * time.Millisecond

// sweepState is the sweeper's schedule, under poller.mu. The sweeper
// sleeps until the earlier of kaAt and detachAt (neither: until kicked);
// park and queueDetach bring them forward.
type sweepState struct {
	kaAt     time.Time // the earliest keep alive deadline of a parked connection, not before the last sweep plus sweepEvery; zero: none
	detachAt time.Time // when due is detached; zero: due is empty
	due      []*conn   // parked connections a writer left attached
	kick     chan struct{}
}

// keepAliveDue reports a parked connection's keep alive deadline to the
// sweeper [MQTT-3.1.2-24] (a running reader enforces its own with a
// deadline); c.mu is held.
func (p *poller) keepAliveDue(c *conn) {
	ka := c.keepAlive
	if ka <= 0 {
		return
	}
	d := time.Unix(0, c.lastActivity.Load()).Add(ka * 3 / 2)
	p.mu.Lock()
	if p.kaAt.IsZero() || d.Before(p.kaAt) {
		p.kaAt = d
		p.kickLocked()
	}
	p.mu.Unlock()
}

// queueDetach has the sweeper detach c, parked with no writer, a little
// later: a subscriber whose socket fills up again at once keeps its
// connection; c.mu is held.
func (p *poller) queueDetach(c *conn) {
	p.mu.Lock()
	p.due = append(p.due, c)
	if p.detachAt.IsZero() {
		p.detachAt = time.Now().Add(sweepEvery)
		p.kickLocked()
	}
	p.mu.Unlock()
}

// kickLocked wakes the sweeper to look at its schedule again; p.mu is
// held.
func (p *poller) kickLocked() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// sweep closes the parked connections whose keep alive has run out, once
// kaAt has come, and detaches the due ones once detachAt has: it scans
// the registered connections only when a deadline may have passed, not
// on every tick.
func (p *poller) sweep(now time.Time) {
	var late, attached []*conn
	p.mu.Lock()
	if !p.detachAt.IsZero() && !now.Before(p.detachAt) {
		attached, p.due, p.detachAt = p.due, nil, time.Time{}
	}
	if !p.kaAt.IsZero() && !now.Before(p.kaAt) {
		var next time.Time
		for _, c := range p.conns {
			// keepAlive is set before the connection first parks, which
			// happens before it enters conns (both under p.mu).
			if c == nil || c.keepAlive <= 0 {
				continue
			}
			d := time.Unix(0, c.lastActivity.Load()).Add(c.keepAlive * 3 / 2)
			if !now.Before(d) {
				late = append(late, c)
				d = now // not parked (its reader cuts it) or cut below: look again
			}
			if next.IsZero() || d.Before(next) {
				next = d
			}
		}
		if !next.IsZero() {
			next = later(next, now.Add(sweepEvery))
		}
		p.kaAt = next
	}
	p.mu.Unlock()
	for _, c := range attached {
		c.mu.Lock()
		c.detachQueue = false
		if c.parked {
			c.detachLocked()
		}
		c.mu.Unlock()
	}
	for _, c := range late {
		c.mu.Lock()
		parked := c.parked
		c.mu.Unlock()
		if parked {
			c.closeWith(codeKeepAliveTimeout, "keep alive timeout", false)
		}
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// sweeper runs sweep when its schedule says, until the poller closes.
func (p *poller) sweeper() {
	defer close(p.sweepDone)
	t := time.NewTimer(time.Hour)
	t.Stop()
	for {
		p.mu.Lock()
		at := p.kaAt
		if at.IsZero() || (!p.detachAt.IsZero() && p.detachAt.Before(at)) {
			at = p.detachAt
		}
		p.mu.Unlock()
		var fire <-chan time.Time
		if !at.IsZero() {
			t.Reset(time.Until(at))
			fire = t.C
		}
		select {
		case <-p.kick:
			t.Stop()
		case now := <-fire:
			p.sweep(now)
		case <-p.quit:
			t.Stop()
			return
		}
	}
}
