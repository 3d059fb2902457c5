package leaf

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/leafbox/leafbox/core/proto"
)

// enqueue appends raw protocol bytes for the writer.
func (p *peer) enqueue(b []byte) {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return
	}
	p.out = append(p.out, b...)
	p.mu.Unlock()
	p.kick()
}

// kick wakes the writer.
func (p *peer) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// ping queues a PING; done, when not nil, receives nil at the PONG or an
// error if the connection ends first. A keepalive PING (done nil) fails
// when MaxPingsOut are unanswered.
func (p *peer) ping(done chan error) error {
	p.mu.Lock()
	if p.ended {
		p.mu.Unlock()
		return ErrNotConnected
	}
	if done == nil && len(p.pings) >= p.l.cfg.MaxPingsOut {
		p.mu.Unlock()
		return ErrStaleConnection
	}
	p.pings = append(p.pings, pingWait{sent: time.Now(), done: done})
	p.out = append(p.out, proto.PingLine...)
	p.mu.Unlock()
	p.kick()
	return nil
}

// pong matches a PONG with the oldest PING and records the RTT.
func (p *peer) pong() {
	p.mu.Lock()
	if len(p.pings) == 0 {
		p.mu.Unlock()
		return
	}
	pw := p.pings[0]
	p.pings = p.pings[1:]
	p.mu.Unlock()
	rtt := time.Since(pw.sent)
	p.rtt.Store(int64(rtt))
	if p.comp != nil && p.l.cfg.Compression == CompressionS2Auto {
		level := autoLevel(rtt, autoThresholds)
		p.level.Store(&level)
	}
	if pw.done != nil {
		pw.done <- nil
	}
}

// finish queues last and ends the connection with err once everything
// queued is written.
func (p *peer) finish(last []byte, err error) {
	p.mu.Lock()
	if !p.ended && !p.draining {
		p.out = append(p.out, last...)
		p.draining = true
		p.endErr = err
	}
	p.mu.Unlock()
	p.kick()
}

// end closes the connection with err (the first error wins).
func (p *peer) end(err error) {
	p.mu.Lock()
	p.endLocked(err)
	p.mu.Unlock()
}

func (p *peer) endLocked(err error) {
	if p.ended {
		return
	}
	p.ended = true
	if p.endErr == nil {
		p.endErr = err
	}
	for _, pw := range p.pings {
		if pw.done != nil {
			pw.done <- ErrNotConnected
		}
	}
	p.pings = nil
	close(p.done)
	_ = p.raw.Close()
}

// reason returns why the connection ended.
func (p *peer) reason(readErr error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.endErr != nil {
		return p.endErr
	}
	if errors.Is(readErr, io.EOF) {
		return fmt.Errorf("leaf: leafnode closed the connection: %w", readErr)
	}
	return readErr
}

// writeLoop is the only writer once the leaf is registered; it coalesces
// whatever was queued into one write and sends keepalive PINGs.
func (p *peer) writeLoop() {
	defer close(p.writerDone)
	ticker := time.NewTicker(p.l.cfg.PingInterval)
	defer ticker.Stop()
	var buf []byte
	for {
		select {
		case <-p.done:
			return
		case <-ticker.C:
			if err := p.ping(nil); err != nil {
				if errors.Is(err, ErrStaleConnection) {
					p.finish(proto.AppendErr(nil, errTextStaleConnection), err)
				} else {
					p.end(err)
					return
				}
			}
		case <-p.wake:
		}
		for {
			p.mu.Lock()
			if p.ended {
				p.mu.Unlock()
				return
			}
			if len(p.out) == 0 {
				draining := p.draining
				if draining {
					p.endLocked(p.endErr)
				}
				p.mu.Unlock()
				if draining {
					return
				}
				break
			}
			buf, p.out = p.out, buf[:0]
			p.inFlight = len(buf)
			p.mu.Unlock()
			err := p.write(buf)
			p.mu.Lock()
			p.inFlight = 0
			p.mu.Unlock()
			if err != nil {
				p.end(fmt.Errorf("leaf: write: %w", err))
				return
			}
			if cap(buf) > retainOutbound {
				buf = nil
			}
		}
	}
}

// write writes one batch within the write deadline, compressed when the
// connection compresses.
func (p *peer) write(b []byte) error {
	if err := p.conn.SetWriteDeadline(time.Now().Add(p.l.cfg.WriteDeadline)); err != nil {
		return err
	}
	if p.comp != nil {
		if level := p.level.Load(); level != nil {
			p.comp.setLevel(*level)
		}
		return p.comp.write(b)
	}
	_, err := p.conn.Write(b)
	return err
}

// writeNow writes b synchronously; only the handshake uses it, before the
// writer starts. Errors are returned but may be ignored when the
// connection is being refused anyway.
func (p *peer) writeNow(b []byte) error {
	return p.write(b)
}
