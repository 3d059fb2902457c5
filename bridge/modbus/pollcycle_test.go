package modbus

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
)

// TestPollCycle measures the poll schedule over a pty: 100 holding
// registers at 10 Hz from an RTU slave that changes every register on
// each read, so each cycle publishes 100 values. Jitter is how far each
// poll's start (the slave seeing the request) is from 100 ms after the
// previous one; cycle time is from the request to the 100th value
// delivered to a subscriber. The goal is p99 jitter under 5 ms; the test
// logs the figures, and fails when the median is above 5 ms: a drifting
// schedule (the next poll an interval after the last one ended) puts the
// median near 25 cycle times late, while a loaded machine's scheduling
// delays move single polls (the p99 of 50), not the median.
func TestPollCycle(t *testing.T) {
	const (
		registers = 100
		interval  = 100 * time.Millisecond
		cycles    = 50
	)
	tb := newTestBroker(t)
	link := rtuLink(t)
	plc := newBank()
	plc.bump = true
	plc.reads = make(chan time.Time, cycles+10)
	newRTUSlave(t, link, units{1: plc})
	regs := make([]Register, registers)
	for i := range regs {
		regs[i] = Register{Name: fmt.Sprint("r", i), Subject: fmt.Sprint("poll.r", i), Table: TableHolding, Address: uint16(i)}
	}
	var mu sync.Mutex
	var arrivals []time.Time
	all := make(chan struct{})
	unsub, err := tb.Bus(t).Subscribe("poll.>", "", func(bridge.Msg) {
		mu.Lock()
		arrivals = append(arrivals, time.Now())
		if len(arrivals) == cycles*registers {
			close(all)
		}
		mu.Unlock()
	})
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
	select {
	case <-all:
	case <-time.After(10 * time.Second):
		t.Fatal("not every cycle's values arrived")
	}
	mu.Lock()
	got := slices.Clone(arrivals)
	mu.Unlock()

	// Each poll's offset from its slot on the 10 Hz grid; jitter is the
	// offset above the smallest. A schedule that drifted (next poll an
	// interval after the last ended) would add the cycle time each poll.
	var offsets, jitter, cycle []time.Duration
	for i := range cycles {
		offsets = append(offsets, reads[i].Sub(reads[0])-time.Duration(i)*interval)
	}
	base := slices.Min(offsets)
	for _, o := range offsets {
		jitter = append(jitter, o-base)
	}
	for i := range cycles {
		cycle = append(cycle, got[(i+1)*registers-1].Sub(reads[i]))
	}
	p := func(ds []time.Duration, q float64) time.Duration {
		s := slices.Clone(ds)
		slices.Sort(s)
		return s[min(len(s)-1, int(q*float64(len(s))))]
	}
	t.Logf("poll of %d registers at %v over a pty, %d cycles: jitter p50 %v p99 %v max %v; cycle time p50 %v p99 %v",
		registers, interval, cycles, p(jitter, 0.5), p(jitter, 0.99), slices.Max(jitter), p(cycle, 0.5), p(cycle, 0.99))
	if j := p(jitter, 0.5); j > 5*time.Millisecond {
		t.Fatalf("median jitter %v", j)
	}
}
