package mqtt

import "time"

// sweepEvery is how often the sweeper checks the keep alive of parked
// connections: one is cut at most this long after 1.5 times its keep
// alive has passed without a byte from it.
const sweepEvery = 250 * time.Millisecond

// sweep closes the parked connections whose keep alive has run out
// [MQTT-3.1.2-24] (a running reader enforces its own with a deadline),
// and detaches the parked ones a writer left attached.
func (p *poller) sweep(now time.Time) {
	var late, attached []*conn
	p.mu.Lock()
	for _, c := range p.conns {
		if c.detachDue.Load() {
			attached = append(attached, c)
		}
		// keepAlive is set before the connection first parks, which
		// happens before it enters conns (both under p.mu).
		if ka := c.keepAlive; ka > 0 && now.Sub(time.Unix(0, c.lastActivity.Load())) >= ka*3/2 {
			late = append(late, c)
		}
	}
	p.mu.Unlock()
	for _, c := range attached {
		c.mu.Lock()
		if c.parked {
			c.detachLocked()
		}
		c.detachDue.Store(false)
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

// sweeper runs sweep until the poller closes.
func (p *poller) sweeper() {
	defer close(p.sweepDone)
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			p.sweep(now)
		case <-p.quit:
			return
		}
	}
}
