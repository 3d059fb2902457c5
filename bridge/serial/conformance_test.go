package serial

import (
	"bufio"
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/bridgetest"
	"github.com/leafbox/leafbox/core/require"
)

// TestConformance runs bridgetest's suite against the serial bridge with
// line framing over a pty: the device sends lines (no acknowledgements),
// gets the commands as lines, is unplugged (pty closed, by-id symlink
// removed) and plugged back (a new pty behind the same symlink), and
// stalls by not reading (the pty's buffer fills and the bridge's write
// blocks).
func TestConformance(t *testing.T) {
	bridgetest.Run(t, ptyHarness{})
}

type ptyHarness struct{}

func (ptyHarness) Open(t *testing.T, routes bridgetest.Routes) (bridge.Bridge, bridgetest.Device) {
	link := byIDLink(t)
	d := &suiteDevice{link: link, got: make(chan []byte, 1<<16), changed: make(chan struct{})}
	d.plug(t)
	t.Cleanup(func() { d.Drop(t) })
	b, err := New(Config{
		Port:           Port{Path: link, ReadTimeout: 20 * time.Millisecond},
		Subject:        routes.In,
		Store:          routes.StoreIn,
		CommandSubject: routes.Out,
		CommandStream:  routes.OutStream,
		CommandDurable: routes.OutDurable,
	})
	require.NoError(t, err)
	return observed{b, d}, d
}

// observed hands the Status the Runner gives the bridge to the device,
// so that a Send can return once the bridge has handled the line.
type observed struct {
	*Bridge
	dev *suiteDevice
}

func (o observed) Run(ctx context.Context, env bridge.Env) error {
	o.dev.status.Store(env.Status)
	return o.Bridge.Run(ctx, env)
}

// handled counts the lines the bridge is done with: published or stored,
// or refused by the stream.
func handled(s bridge.Snapshot) uint64 {
	return s.In + s.Drops[slices.Index(bridge.DropReasons, bridge.DropRejected)]
}

// suiteDevice is the device end of a pty, replaced by a new pty at each
// Restore.
type suiteDevice struct {
	link   string
	got    chan []byte
	status atomic.Pointer[bridge.Status]

	mu      sync.Mutex
	master  *os.File
	tty     *os.File
	gone    bool
	stalled bool
	changed chan struct{} // closed and replaced at every change
}

func (d *suiteDevice) notify() {
	close(d.changed)
	d.changed = make(chan struct{})
}

// await waits until cond (called with mu held) holds, or ctx ends.
func (d *suiteDevice) await(ctx context.Context, cond func() bool) error {
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

// plug opens a new pty pair behind the link and reads it.
func (d *suiteDevice) plug(t *testing.T) {
	master, tty, err := pty.Open()
	require.NoError(t, err)
	_ = os.Remove(d.link)
	require.NoError(t, os.Symlink(tty.Name(), d.link))
	d.mu.Lock()
	d.master, d.tty, d.gone = master, tty, false
	d.notify()
	d.mu.Unlock()
	go d.read(master)
}

func (d *suiteDevice) read(master *os.File) {
	r := bufio.NewReader(master)
	for {
		// A stalled device reads nothing; the pty fills up.
		_ = d.await(context.Background(), func() bool { return !d.stalled || d.master != master })
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		d.got <- line[:len(line)-1]
	}
}

func (d *suiteDevice) Acknowledges() bool { return false }

// Send writes the line and returns once the bridge has handled it (the
// protocol has no acknowledgement; this is when it was delivered). A line
// lost to an unplug is sent again on the next device.
func (d *suiteDevice) Send(ctx context.Context, payload []byte) error {
	for {
		if err := d.await(ctx, func() bool { return !d.gone }); err != nil {
			return err
		}
		st := d.status.Load()
		var before uint64
		if st != nil {
			before = handled(st.Snapshot())
		}
		d.mu.Lock()
		master := d.master
		d.mu.Unlock()
		if _, err := master.Write(append(append([]byte{}, payload...), '\n')); err != nil {
			continue
		}
		if st == nil {
			return nil
		}
		for {
			wctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			err := st.Wait(wctx, func(s bridge.Snapshot) bool { return handled(s) > before })
			cancel()
			if err == nil {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			d.mu.Lock()
			lost := d.gone || d.master != master
			d.mu.Unlock()
			if lost {
				break // send again on the next device
			}
		}
	}
}

func (d *suiteDevice) Receive(ctx context.Context) ([]byte, error) {
	select {
	case p := <-d.got:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (d *suiteDevice) Drop(t *testing.T) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gone {
		return
	}
	d.master.Close()
	d.tty.Close()
	_ = os.Remove(d.link)
	d.gone = true
	d.notify()
}

func (d *suiteDevice) Restore(t *testing.T) { d.plug(t) }

func (d *suiteDevice) Stall(t *testing.T) {
	d.mu.Lock()
	d.stalled = true
	d.notify()
	d.mu.Unlock()
}

func (d *suiteDevice) Resume(t *testing.T) {
	d.mu.Lock()
	d.stalled = false
	d.notify()
	d.mu.Unlock()
}
