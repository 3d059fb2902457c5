package modbus

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/leafbox/leafbox/bridge"
	mb "github.com/simonvetter/modbus"
)

// poller is one Run's poll loop over an open client.
type poller struct {
	b      *Bridge
	env    bridge.Env
	log    *slog.Logger
	client *mb.ModbusClient
	ctx    context.Context
	// timeouts counts unanswered requests in a row, across devices.
	timeouts int
	out      []byte
	// lastWarn and held rate-limit the warnings of failed requests: at
	// most one per warnEvery, with the number held back.
	lastWarn time.Time
	held     int
}

// warnEvery is the least time between two warnings of failed requests.
const warnEvery = 10 * time.Second

// warn logs a failed request, at most once per warnEvery.
func (p *poller) warn(msg string, err error) {
	now := time.Now()
	if !p.lastWarn.IsZero() && now.Sub(p.lastWarn) < warnEvery {
		p.held++
		return
	}
	p.log.Warn(msg, "err", err, "suppressed", p.held)
	p.lastWarn, p.held = now, 0
}

// loop polls each device on its grid, one slot every poll interval from
// the loop's start, and serves write requests between polls. A poll is
// due at its slot; one that overran past the next slot (or started too
// late for it) skips to the first slot at or after its end, counting the
// slots it passed over as missed, so that the grid never moves and a
// late poll does not make every later one late. A device that was
// written to is polled once more soon after, out of its grid, to show
// the written value.
func (p *poller) loop(writes <-chan writeReq) error {
	due := make([]time.Time, len(p.b.devices))
	soon := make([]bool, len(p.b.devices)) // soon[i]: poll device i out of its grid, after a write
	now := time.Now()
	for i := range due {
		due[i] = now
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		next := 0
		for i := range due {
			if due[i].Before(due[next]) {
				next = i
			}
		}
		// A write waits at most for the poll in progress, even when
		// polls overrun their interval.
		var tick <-chan time.Time
		scheduled := true
		wait := time.Until(due[next])
		if i := slices.Index(soon, true); i >= 0 && wait > 0 {
			next, scheduled, wait = i, false, 0
		}
		if wait > 0 {
			timer.Reset(wait)
			tick = timer.C
		} else {
			tick = closedTick
		}
		select {
		case <-p.ctx.Done():
			return nil
		case w := <-writes:
			timer.Stop()
			if err := p.write(w); err != nil {
				return err
			}
			for i, d := range p.b.devices {
				if d == w.dev {
					soon[i] = true
				}
			}
			continue
		case <-tick:
		}
		if p.ctx.Err() != nil {
			return nil
		}
		d := p.b.devices[next]
		soon[next] = false // a scheduled poll shows a written value as well
		if err := p.poll(d); err != nil {
			return err
		}
		if scheduled {
			var missed uint64
			due[next], missed = nextSlot(due[next], time.Now(), d.PollInterval)
			d.stats.missedPolls.Add(missed)
		}
	}
}

// nextSlot returns when a device's next poll is due, its poll due at slot
// due having ended at now, on the grid of slots every interval through
// due: the slot after due, or, when the poll ran past that, the first slot
// at or after now; missed is the number of slots passed over.
func nextSlot(due, now time.Time, every time.Duration) (next time.Time, missed uint64) {
	next = due.Add(every)
	late := now.Sub(next)
	if late <= 0 {
		return next, 0
	}
	n := (late + every - 1) / every // slots from next to the first at or after now
	return next.Add(n * every), uint64(n)
}

// closedTick is always ready: a poll that is already due.
var closedTick = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// poll reads every block of d and publishes the values that changed. It
// returns an error only when the bus itself failed.
func (p *poller) poll(d *device) error {
	start := time.Now()
	if err := p.client.SetUnitId(d.Unit); err != nil {
		return err
	}
	complete := true
	for i := range d.blocks {
		blk := &d.blocks[i]
		words, bits, err := p.read(blk)
		if err := p.failed(d, err, fmt.Sprintf("reading %s %d+%d", blk.table, blk.address, blk.quantity)); err != nil {
			return err
		}
		if err != nil {
			complete = false
			continue
		}
		ts := time.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")
		for _, br := range blk.regs {
			r := d.Registers[br.index]
			var v Value
			if bits != nil {
				v = Value{Raw: bits[br.offset], Bool: bits[br.offset]}
			} else {
				v = decode(r, words[br.offset:br.offset+r.words()])
			}
			if d.have[br.index] && !changed(r, d.last[br.index], v) {
				continue
			}
			if p.publish(r, v, ts) {
				d.last[br.index], d.have[br.index] = v, true
			}
		}
	}
	if complete {
		d.stats.polled(time.Since(start))
	}
	return nil
}

func (p *poller) read(blk *block) ([]uint16, []bool, error) {
	switch blk.table {
	case TableCoil:
		bits, err := p.client.ReadCoils(blk.address, blk.quantity)
		return nil, bits, err
	case TableDiscrete:
		bits, err := p.client.ReadDiscreteInputs(blk.address, blk.quantity)
		return nil, bits, err
	case TableInput:
		words, err := p.client.ReadRegisters(blk.address, blk.quantity, mb.INPUT_REGISTER)
		return words, nil, err
	default:
		words, err := p.client.ReadRegisters(blk.address, blk.quantity, mb.HOLDING_REGISTER)
		return words, nil, err
	}
}

// failed counts a request's error against d and returns it when the bus
// must be reopened; nil otherwise (also for no error).
func (p *poller) failed(d *device, err error, what string) error {
	st := p.env.Status
	kind := classify(err)
	if kind != errTimeout && kind != errFatal {
		p.timeouts = 0
	}
	if kind == errNone {
		return nil
	}
	werr := fmt.Errorf("modbus: device %s (unit %d): %s: %w", d.Name, d.Unit, what, err)
	st.SetError(werr)
	switch kind {
	case errException:
		d.stats.exceptions.Add(1)
		d.stats.setError(werr, exceptionName(err))
		p.warn("modbus exception", werr)
		return nil
	case errBadFrame:
		d.stats.badFrames.Add(1)
		d.stats.setError(werr, "")
		st.CountBadFrame()
		p.warn("modbus bad frame", werr)
		return nil
	case errTimeout:
		d.stats.timeouts.Add(1)
		d.stats.setError(werr, "")
		p.warn("modbus timeout", werr)
		if verr := p.b.vanished(); verr != nil {
			return verr
		}
		p.timeouts++
		if p.timeouts >= maxTimeouts {
			return fmt.Errorf("%w: %d requests in a row: %v", ErrNoResponse, p.timeouts, werr)
		}
		return nil
	}
	d.stats.setError(werr, "")
	if verr := p.b.vanished(); verr != nil {
		return verr
	}
	return werr
}

// publish sends one value; it reports whether the value went out (a
// value that did not is tried again at the next poll).
func (p *poller) publish(r Register, v Value, ts string) bool {
	cfg := p.b.cfg
	p.out = appendValue(p.out[:0], r, v, ts, cfg.Plain)
	var err error
	if cfg.Store {
		ctx, cancel := context.WithTimeout(p.ctx, cfg.StoreWait)
		_, _, err = bridge.Store(ctx, p.env.Bus, r.Subject, nil, p.out)
		cancel()
	} else {
		err = p.env.Bus.Publish(r.Subject, "", nil, p.out)
	}
	if err != nil {
		if p.ctx.Err() == nil {
			p.env.Status.CountDrop(bridge.DropRejected)
			p.env.Status.SetError(err)
		}
		return false
	}
	p.env.Status.CountIn(1)
	return true
}
