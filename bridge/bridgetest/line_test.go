package bridgetest_test

// A tiny bridge for proving the suite: a TCP line device.
//
//	device → bridge   "MSG <payload>\n", answered "ACK\n" once published (or stored)
//	bridge → device   "OUT <payload>\n", answered "OK\n" once the device took it
//
// The device listens; the bridge dials it. A message the device sent and
// that was not acknowledged is sent again on the next connection.

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/bridgetest"
)

// faults make the line bridge misbehave, one way each.
type faults struct {
	blockingSubscriber bool // the subscription handler waits for the device
	ackBeforeStore     bool // ACK the device before storing
	ackBeforeDevice    bool // ack the stream delivery before the device took it
	ignoreStop         bool // Run ignores its context
	ignoreDrop         bool // a dropped device goes unnoticed
	leakSubscription   bool // the core subscription outlives Run
}

// lineBridge is the bridge under test.
type lineBridge struct {
	addr   string
	routes bridgetest.Routes
	faults faults
}

func (b *lineBridge) Run(ctx context.Context, env bridge.Env) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", b.addr)
	if err != nil {
		return err
	}
	if b.faults.ignoreStop {
		ctx = context.Background()
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer conn.Close()

	var wmu sync.Mutex
	write := func(line string) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := conn.Write([]byte(line))
		return err
	}
	oks := make(chan struct{}, 1)
	env.Status.SetState(bridge.StateConnected)

	// Outbound: one message at a time, each "OK"ed before the next.
	deliver := func(payload []byte) error {
		if err := write("OUT " + string(payload) + "\n"); err != nil {
			return err
		}
		select {
		case <-oks:
			return nil
		case <-ctx.Done():
			return bridge.ErrNotConnected
		}
	}
	if b.routes.OutStream != "" {
		cons, err := bridge.Consume(ctx, env.Bus, bridge.ConsumerConfig{Stream: b.routes.OutStream, Durable: b.routes.OutDurable,
			FilterSubjects: []string{b.routes.Out}})
		if err != nil {
			return err
		}
		defer cons.Close()
		wg.Go(func() {
			for {
				d, err := cons.Next(ctx)
				if err != nil {
					cancel(err)
					return
				}
				if b.faults.ackBeforeDevice {
					_ = d.Ack()
				}
				if err := deliver(d.Data); err != nil {
					cancel(err)
					return
				}
				if err := d.Ack(); err != nil {
					cancel(err)
					return
				}
				env.Status.CountOut(1)
			}
		})
	} else {
		queue := make(chan []byte, 64)
		unsub, err := env.Bus.Subscribe(b.routes.Out, "", func(m bridge.Msg) {
			p := append([]byte{}, m.Data...)
			if b.faults.blockingSubscriber {
				queue <- p
				return
			}
			select {
			case queue <- p:
			default:
				env.Status.CountDrop(bridge.DropQueueFull)
			}
		})
		if err != nil {
			return err
		}
		if !b.faults.leakSubscription {
			defer unsub()
		}
		wg.Go(func() {
			for {
				select {
				case p := <-queue:
					if err := deliver(p); err != nil {
						cancel(err)
						return
					}
					env.Status.CountOut(1)
				case <-ctx.Done():
					return
				}
			}
		})
	}

	// Inbound, and the device's OKs.
	wg.Go(func() {
		r := bufio.NewReader(conn)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				if b.faults.ignoreDrop {
					return
				}
				cancel(err)
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "OK":
				select {
				case oks <- struct{}{}:
				default:
				}
			case strings.HasPrefix(line, "MSG "):
				payload := []byte(strings.TrimPrefix(line, "MSG "))
				if !b.routes.StoreIn {
					err = env.Bus.Publish(b.routes.In, "", nil, payload)
				} else {
					if b.faults.ackBeforeStore {
						_ = write("ACK\n")
					}
					_, _, err = bridge.Store(ctx, env.Bus, b.routes.In, nil, payload)
				}
				if err != nil {
					env.Status.SetError(err)
					cancel(err) // not acknowledged: the device sends it again
					return
				}
				env.Status.CountIn(1)
				if err := write("ACK\n"); err != nil {
					cancel(err)
					return
				}
			}
		}
	})

	<-ctx.Done()
	if err := context.Cause(ctx); !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// lineHarness builds line bridges with the given faults.
type lineHarness struct{ faults faults }

func (h lineHarness) Open(t *testing.T, routes bridgetest.Routes) (bridge.Bridge, bridgetest.Device) {
	d := newLineDevice(t)
	return &lineBridge{addr: d.ln.Addr().String(), routes: routes, faults: h.faults}, d
}

// lineDevice is the device end: a listener the bridge dials.
type lineDevice struct {
	ln       net.Listener
	received chan []byte

	mu      sync.Mutex
	changed chan struct{} // closed and replaced on every change below
	conns   map[net.Conn]bool
	gone    map[net.Conn]bool // closed by Drop
	current net.Conn          // the newest connection
	down    bool
	stalled bool
	pending []byte // the message awaiting its ACK
	acked   bool
	sendMu  sync.Mutex // one Send at a time
}

func newLineDevice(t *testing.T) *lineDevice {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := &lineDevice{ln: ln, received: make(chan []byte, 1<<16), changed: make(chan struct{}), conns: map[net.Conn]bool{}, gone: map[net.Conn]bool{}}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		_ = ln.Close()
		d.mu.Lock()
		for c := range d.conns {
			_ = c.Close()
		}
		d.mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d.mu.Lock()
			if d.down {
				d.mu.Unlock()
				_ = c.Close()
				continue
			}
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(4096) // a slow device fills up fast
			}
			d.conns[c] = true
			d.current = c
			resend := d.pending
			d.notifyLocked()
			d.mu.Unlock()
			if resend != nil {
				_, _ = c.Write(append(append([]byte("MSG "), resend...), '\n'))
			}
			wg.Go(func() { d.serve(c) })
		}
	})
	return d
}

// notifyLocked wakes the waiters; d.mu is held.
func (d *lineDevice) notifyLocked() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// waitFor waits until cond (checked with d.mu held) holds.
func (d *lineDevice) waitFor(ctx context.Context, cond func() bool) error {
	for {
		d.mu.Lock()
		ok, ch := cond(), d.changed
		d.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// serve reads one connection from the bridge.
func (d *lineDevice) serve(c net.Conn) {
	defer func() {
		_ = c.Close()
		d.mu.Lock()
		delete(d.conns, c)
		delete(d.gone, c)
		if d.current == c {
			d.current = nil
		}
		d.notifyLocked()
		d.mu.Unlock()
	}()
	r := bufio.NewReader(c)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		// A stalled device takes nothing (and reads no more): a line read
		// meanwhile is lost if the connection drops before Resume.
		_ = d.waitFor(context.Background(), func() bool { return !d.stalled || d.gone[c] })
		d.mu.Lock()
		gone := d.gone[c]
		d.mu.Unlock()
		if gone {
			return
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "ACK":
			d.mu.Lock()
			d.pending, d.acked = nil, true
			d.notifyLocked()
			d.mu.Unlock()
		case strings.HasPrefix(line, "OUT "):
			d.received <- []byte(strings.TrimPrefix(line, "OUT "))
			if _, err := c.Write([]byte("OK\n")); err != nil {
				return
			}
		}
	}
}

func (d *lineDevice) Acknowledges() bool { return true }

func (d *lineDevice) Send(ctx context.Context, payload []byte) error {
	d.sendMu.Lock()
	defer d.sendMu.Unlock()
	d.mu.Lock()
	d.pending, d.acked = append([]byte{}, payload...), false
	c := d.current
	d.mu.Unlock()
	if c != nil {
		_, _ = c.Write(append(append([]byte("MSG "), payload...), '\n'))
	}
	// Without a connection, or if it breaks, the next one resends.
	err := d.waitFor(ctx, func() bool { return d.acked })
	if err != nil {
		d.mu.Lock()
		d.pending = nil
		d.mu.Unlock()
	}
	return err
}

func (d *lineDevice) Receive(ctx context.Context) ([]byte, error) {
	select {
	case p := <-d.received:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *lineDevice) Drop(t *testing.T) {
	d.mu.Lock()
	d.down = true
	for c := range d.conns {
		d.gone[c] = true
		_ = c.Close()
	}
	d.notifyLocked()
	d.mu.Unlock()
}

func (d *lineDevice) Restore(t *testing.T) {
	d.mu.Lock()
	d.down = false
	d.mu.Unlock()
}

func (d *lineDevice) Stall(t *testing.T) {
	d.mu.Lock()
	d.stalled = true
	d.notifyLocked()
	d.mu.Unlock()
}

func (d *lineDevice) Resume(t *testing.T) {
	d.mu.Lock()
	d.stalled = false
	d.notifyLocked()
	d.mu.Unlock()
}

// WaitIdle implements bridgetest.IdleWaiter.
func (d *lineDevice) WaitIdle(ctx context.Context) error {
	return d.waitFor(ctx, func() bool { return len(d.conns) == 0 })
}
