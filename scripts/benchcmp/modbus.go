package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
)

// The modbus rows measure leafbox's Modbus RTU poll schedule, which
// nats-server has no counterpart of (its column reads n/a): the harness
// plays an RTU slave on a pseudo-terminal with modbusRegisters holding
// registers whose every value changes at each read (so every poll
// publishes them all), leafbox's Modbus bridge polls them every
// modbusInterval and publishes each on modbus.r<N>, and a raw-protocol
// NATS subscriber on modbus.> notes the arrivals.
//
//   - jitter: each poll's start (the slave reading the request) after its
//     own slot on the bridge's modbusInterval grid, the nearest slot at or
//     before it (see gridLateness); a schedule that drifts (the next poll
//     an interval after the last one ended) grows it by a cycle time each
//     poll;
//   - missed slots: the slots of that grid, between the first and the
//     last poll measured, that had no poll (the bridge skips those a poll
//     overran), as a share of all the slots;
//   - cycle time: from a poll's request to its last value at the
//     subscriber.

// Sizes of the modbus rows.
const (
	modbusRegisters = 100
	modbusInterval  = 100 * time.Millisecond
	modbusCycles    = 50
	modbusSubject   = "modbus.>"
)

// modbusScenario returns the poll-cycle scenario.
func modbusScenario() scenario {
	name := fmt.Sprintf("Modbus RTU poll of %d registers at %v over a pty", modbusRegisters, modbusInterval)
	return scenario{slug: "modbus-poll", kind: kindModbus, msgs: modbusCycles, subjectOnly: true, metrics: []metric{
		{Name: name + ", cycle time p50", Unit: unitMillis, Better: lowerIsBetter, Order: orderModbus},
		{Name: name + ", cycle time p99", Unit: unitMillis, Better: lowerIsBetter, Order: orderModbus},
		{Name: name + ", jitter p50", Unit: unitMillis, Better: lowerIsBetter, Order: orderModbus},
		{Name: name + ", jitter p99", Unit: unitMillis, Better: lowerIsBetter, Order: orderModbus},
		{Name: name + ", grid slots missed", Unit: unitPercent, Better: lowerIsBetter, Order: orderModbus},
	}}
}

// modbusCRC is Modbus's CRC-16 (serial line v1.02 §6.2.2: polynomial
// 0xA001 reflected, initial 0xFFFF), sent low byte first.
func modbusCRC(b []byte) uint16 {
	crc := uint16(0xffff)
	for _, c := range b {
		crc ^= uint16(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xa001
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}

// serveRTU answers read holding registers requests (function 03) of unit
// 1 on rw, with values that change at every read, and sends the time it
// read each request to reads until rw fails.
func serveRTU(rw io.ReadWriter, reads chan<- time.Time) error {
	r := bufio.NewReader(rw)
	var bump uint16
	for {
		req := make([]byte, 8) // unit, 03, address, quantity, CRC
		if _, err := io.ReadFull(r, req); err != nil {
			return err
		}
		at := time.Now()
		if req[1] != 3 || binary.LittleEndian.Uint16(req[6:]) != modbusCRC(req[:6]) {
			return fmt.Errorf("benchcmp: Modbus slave: unexpected request % x", req)
		}
		n := int(binary.BigEndian.Uint16(req[4:]))
		bump++
		resp := []byte{req[0], 3, byte(2 * n)}
		for i := range n {
			resp = binary.BigEndian.AppendUint16(resp, bump+uint16(i))
		}
		resp = binary.LittleEndian.AppendUint16(resp, modbusCRC(resp))
		if _, err := rw.Write(resp); err != nil {
			return err
		}
		select {
		case reads <- at:
		default:
		}
	}
}

// modbusConfig is leafbox's configuration polling the slave at port.
func modbusConfig(port string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: modbusbench\nbridges:\n  modbus:\n    - name: bench\n      rtu: {port: %q, baud: 115200}\n      timeout: 500ms\n"+
		"      devices:\n        - name: d\n          unit: 1\n          poll_interval: %v\n          registers:\n", port, modbusInterval)
	for i := range modbusRegisters {
		fmt.Fprintf(&b, "            - {name: r%d, subject: modbus.r%d, table: holding, address: %d}\n", i, i, i)
	}
	return b.String()
}

// measureModbus runs the poll-cycle scenario on leafbox and returns the
// cycle time p50 and p99 and the jitter p50 and p99, in ms.
func (m *measurer) measureModbus(ctx context.Context, f *fleet, sc scenario, side int) ([]float64, error) {
	if f.styles[side] != styleLeafbox {
		return nil, errors.New("benchcmp: the modbus rows need leafbox")
	}
	master, tty, err := pty.Open()
	if err != nil {
		return nil, fmt.Errorf("benchcmp: pty: %w", err)
	}
	defer master.Close()
	defer tty.Close()
	reads := make(chan time.Time, 4*sc.msgs)
	served := make(chan error, 1)
	go func() { served <- serveRTU(master, reads) }()

	f.fresh++
	dir := filepath.Join(f.workDir, fmt.Sprintf("modbus%03d-server%d", f.fresh, side))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("benchcmp: %w", err)
	}
	path := filepath.Join(dir, "leafbox.yaml")
	setup := serverSetup{configPath: path, config: modbusConfig(tty.Name()), args: []string{"run", "--config", path,
		"--addr", "127.0.0.1", "--port", "-1", "--http-port", "-1", "--ports-file-dir", dir}}

	// leafbox starts the bridge with the server, before the subscriber
	// is in place: the polls counted start once values arrive.
	var mu sync.Mutex
	var arrivals []time.Time
	srv, err := startSetup(ctx, f.labels[side], f.bins[side], setup, dir)
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	sub, err := subscribeNATS(ctx, srv.clientAddr, modbusSubject, func(_ string, _ []byte, now time.Time) {
		mu.Lock()
		arrivals = append(arrivals, now)
		mu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	defer sub.close()

	// Skip the polls before the subscription: wait for a cycle's values,
	// then take the next modbusCycles polls.
	var polls []time.Time
	deadline := time.After(m.nats.timeout)
	for len(polls) < sc.msgs {
		select {
		case at := <-reads:
			mu.Lock()
			started := len(arrivals) > 0
			mu.Unlock()
			if started {
				polls = append(polls, at)
			}
		case err := <-served:
			return nil, fmt.Errorf("benchcmp: Modbus slave: %v%s", err, srv.logTail())
		case <-sub.done:
			return nil, fmt.Errorf("benchcmp: NATS subscriber: %v", sub.err)
		case <-deadline:
			return nil, fmt.Errorf("benchcmp: %d of %d polls within %v%s", len(polls), sc.msgs, m.nats.timeout, srv.logTail())
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if err := srv.alive(); err != nil {
			return nil, err
		}
	}
	// Each poll's last value: the modbusRegisters-th arrival after it.
	last := make([]time.Time, 0, len(polls))
	for len(last) < len(polls) {
		mu.Lock()
		got := slices.Clone(arrivals)
		mu.Unlock()
		last = last[:0]
		for _, p := range polls {
			i, _ := slices.BinarySearchFunc(got, p, func(a, b time.Time) int { return a.Compare(b) })
			if i+modbusRegisters-1 >= len(got) {
				break
			}
			last = append(last, got[i+modbusRegisters-1])
		}
		if len(last) < len(polls) {
			if err := pause(ctx, 50*time.Millisecond); err != nil {
				return nil, err
			}
		}
	}
	var cycles []float64
	for i, p := range polls {
		cycles = append(cycles, float64(last[i].Sub(p))/1e6)
	}
	late, missed := gridLateness(polls, modbusInterval)
	slices.Sort(late)
	slices.Sort(cycles)
	c50, _ := percentile(cycles, 50)
	c99, _ := percentile(cycles, 99)
	j50, _ := percentile(late, 50)
	j99, _ := percentile(late, 99)
	share := 100 * float64(missed) / float64(missed+len(polls))
	return []float64{c50, c99, j50, j99, share}, nil
}

// gridLateness places each poll (its start, in order) in its slot of a
// grid of slots every interval, the nearest slot at or before it, and
// returns each poll's lateness after its slot in ms and how many slots
// between the first poll's and the last one's had no poll.
//
// The bridge keeps its grid from its start, which the harness does not
// see, so the grid's phase is estimated from the polls: the phase at
// which one of them started on time and which makes their total lateness
// least (a poll is never early; most start close to their slot). A
// phase is found modulo the interval, so a poll just before a slot
// boundary and one just after it are told apart, and a poll late by more
// than half an interval still counts against its own slot.
func gridLateness(polls []time.Time, interval time.Duration) (late []float64, missed int) {
	if len(polls) == 0 {
		return nil, 0
	}
	mod := func(d time.Duration) time.Duration { return ((d % interval) + interval) % interval }
	phases := make([]time.Duration, len(polls))
	for i, p := range polls {
		phases[i] = mod(p.Sub(polls[0]))
	}
	best, bestTotal := time.Duration(0), time.Duration(-1)
	for _, c := range phases {
		var total time.Duration
		for _, ph := range phases {
			total += mod(ph - c)
		}
		if bestTotal < 0 || total < bestTotal {
			best, bestTotal = c, total
		}
	}
	prev := 0
	for i, p := range polls {
		d := p.Sub(polls[0]) - best // from the slot at or before the first poll
		lateness := mod(d)
		slot := int((d - lateness) / interval)
		if i > 0 && slot > prev+1 {
			missed += slot - prev - 1
		}
		prev = slot
		late = append(late, float64(lateness)/1e6)
	}
	return late, missed
}
