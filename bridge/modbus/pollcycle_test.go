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
