package modbus

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
)

// TestPollCycle: polls keep to a fixed-rate schedule over a pty. 100
// holding registers at 10 Hz from an RTU slave that takes 40 ms to answer
// and changes every register on each read: every poll publishes all 100
// values, and the polls start an interval apart on average, not an
// interval after the last one ended (which would stretch each to 140 ms
// and more). The cycle time and jitter figures are scripts/bench's
// (`--only modbus`); a loaded machine moves single polls, which this
// test does not judge.
func TestPollCycle(t *testing.T) {
	const (
		registers = 100
		interval  = 100 * time.Millisecond
		cycles    = 20
	)
	tb := newTestBroker(t)
	link := rtuLink(t)
	plc := newBank()
	plc.bump = true
	plc.delay = 40 * time.Millisecond
	plc.reads = make(chan time.Time, cycles+10)
	newRTUSlave(t, link, units{1: plc})
	regs := make([]Register, registers)
	for i := range regs {
		regs[i] = Register{Name: fmt.Sprint("r", i), Subject: fmt.Sprint("poll.r", i), Table: TableHolding, Address: uint16(i)}
	}
	var arrived atomic.Int64
	unsub, err := tb.Bus(t).Subscribe("poll.>", "", func(bridge.Msg) { arrived.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	b := mustNew(t, Config{RTU: Line{Path: link, Baud: 115200}, Timeout: 500 * time.Millisecond,
		Devices: []Device{{Name: "d", Unit: 1, PollInterval: interval, Registers: regs}}})
	runBridge(t, b, tb)

	var reads []time.Time
	for len(reads) < cycles {
		select {
		case at := <-plc.reads:
			reads = append(reads, at)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d polls in 10s", len(reads))
		}
	}
	// Every value of every poll but the last, which may be on its way.
	if got, want := arrived.Load(), int64((cycles-1)*registers); got < want {
		t.Errorf("%d values published by %d polls, want at least %d", got, cycles, want)
	}
	mean := reads[cycles-1].Sub(reads[0]) / (cycles - 1)
	if mean > interval+interval/5 {
		t.Fatalf("polls %v apart on average, want %v: the schedule drifts by the device's response time", mean, interval)
	}
}

// TestNextSlot: after a poll, the next is due at the device's next grid
// slot; a poll that ran past it skips to the first slot at or after its
// end and counts the slots it passed over, so the grid stays where it was.
func TestNextSlot(t *testing.T) {
	const every = 100 * time.Millisecond
	t0 := time.Date(2026, 12, 2, 15, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, tc := range []struct {
		due, now, next int // ms from t0
		missed         uint64
	}{
		{due: 400, now: 404, next: 500},                 // a poll of 4 ms
		{due: 400, now: 499, next: 500},                 // ends just before the next slot
		{due: 400, now: 500, next: 500},                 // ends on it: still on time
		{due: 400, now: 501, next: 600, missed: 1},      // 1 ms past it: that slot is lost
		{due: 400, now: 633, next: 700, missed: 2},      // an overrun of 233 ms: slots 500 and 600
		{due: 400, now: 700, next: 700, missed: 2},      // ends on a slot: that one is polled
		{due: 400, now: 1_450, next: 1_500, missed: 10}, // a bus that hung for a second
	} {
		next, missed := nextSlot(at(tc.due), at(tc.now), every)
		if !next.Equal(at(tc.next)) || missed != tc.missed {
			t.Errorf("nextSlot(due %d ms, now %d ms) = %v ms, %d missed; want %d ms, %d missed",
				tc.due, tc.now, next.Sub(t0).Milliseconds(), missed, tc.next, tc.missed)
		}
		if off := next.Sub(t0) % every; off != 0 {
			t.Errorf("nextSlot(due %d ms, now %d ms) = %v: off the grid by %v", tc.due, tc.now, next.Sub(t0), off)
		}
	}
}

// TestPollOverrunKeepsGrid: one poll of a device on a pty overruns its
// 100 ms interval by more than two intervals; the polls after it start
// on the same grid as the ones before (not an interval after it ended),
// and the slots it passed over are counted as missed polls.
func TestPollOverrunKeepsGrid(t *testing.T) {
	const (
		interval = 100 * time.Millisecond
		reads    = 10
	)
	tb := newTestBroker(t)
	link := rtuLink(t)
	plc := newBank()
	plc.reads = make(chan time.Time, reads+10)
	plc.bump = true
	plc.slowRead, plc.slowBy = 4, 2*interval+interval/3 // read 4 ends about 2⅓ intervals late
	newRTUSlave(t, link, units{1: plc})
	regs := []Register{{Name: "r0", Subject: "grid.r0", Table: TableHolding, Address: 0}}
	b := mustNew(t, Config{RTU: Line{Path: link, Baud: 115200}, Timeout: time.Second,
		Devices: []Device{{Name: "d", Unit: 1, PollInterval: interval, Registers: regs}}})
	st := runBridge(t, b, tb)

	var at []time.Time
	for len(at) < reads {
		select {
		case r := <-plc.reads:
			at = append(at, r)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d polls in 10s", len(at))
		}
	}
	// Each poll's grid slot, counted from the first poll's, and how far
	// from it the poll started.
	var slots []int
	gaps := 0
	for i, r := range at {
		d := r.Sub(at[0])
		k := int((d + interval/2) / interval)
		if off := d - time.Duration(k)*interval; off > interval/4 || off < -interval/4 {
			t.Errorf("poll %d started %v from its slot %d: off the grid (polls at %v)", i, off, k, offsets(at))
		}
		if i > 0 {
			gaps += k - slots[i-1] - 1
		}
		slots = append(slots, k)
	}
	if gaps < 2 {
		t.Errorf("slots %v: the overrun of read 4 passed over %d slots, want at least 2", slots, gaps)
	}
	// The counter agrees with the slots seen, once the tenth poll has
	// published its value (every poll changes it); the overrun's slots
	// were counted long before.
	waitFor(t, st, "the tenth poll's value", func(s bridge.Snapshot) bool { return s.In >= reads })
	if got := b.Devices()[0].MissedPolls; got != uint64(gaps) {
		t.Errorf("MissedPolls = %d, want the %d slots missing from %v", got, gaps, slots)
	}
	if got := b.DeviceStatuses()[0].MissedPolls; got != uint64(gaps) {
		t.Errorf("DeviceStatuses MissedPolls = %d, want %d", got, gaps)
	}
}

// offsets returns each time of at after the first, for messages.
func offsets(at []time.Time) []time.Duration {
	out := make([]time.Duration, len(at))
	for i, a := range at {
		out[i] = a.Sub(at[0]).Round(time.Millisecond)
	}
	return out
}
