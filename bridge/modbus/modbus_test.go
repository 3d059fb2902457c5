package modbus

import (
	"encoding/json"
	"math"
	"os"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nats.go"
)

func mustNew(t *testing.T, cfg Config) *Bridge {
	t.Helper()
	b, err := New(cfg)
	require.NoError(t, err)
	return b
}

// published is a value as the bridge publishes it in JSON.
type published struct {
	Value any    `json:"value"`
	Raw   any    `json:"raw"`
	TS    string `json:"ts"`
}

func value(t *testing.T, m *nats.Msg) published {
	t.Helper()
	var p published
	require.NoError(t, json.Unmarshal(m.Data, &p), string(m.Data))
	if _, err := time.Parse(time.RFC3339Nano, p.TS); err != nil {
		t.Fatalf("ts %q: %v", p.TS, err)
	}
	return p
}

func request(t *testing.T, nc *nats.Conn, subj, data string) writeResult {
	t.Helper()
	m, err := nc.Request(subj, []byte(data), 10*time.Second)
	require.NoError(t, err, subj)
	var res writeResult
	require.NoError(t, json.Unmarshal(m.Data, &res), string(m.Data))
	return res
}

// plcRegisters is a register map with every table and type.
func plcRegisters() []Register {
	return []Register{
		{Name: "temp", Subject: "plc.temp", Table: TableHolding, Address: 0, Type: TypeInt16, Scale: 0.1, Deadband: 0.5},
		{Name: "flow", Subject: "plc.flow", Table: TableHolding, Address: 1, Type: TypeFloat32},
		{Name: "energy", Subject: "plc.energy", Table: TableHolding, Address: 3, Type: TypeUint32, LowWordFirst: true},
		{Name: "offset", Subject: "plc.offset", Table: TableInput, Address: 10, Type: TypeInt32},
		{Name: "pump", Subject: "plc.pump", Table: TableCoil, Address: 3, Writable: true},
		{Name: "door", Subject: "plc.door", Table: TableDiscrete, Address: 0},
		{Name: "setpoint", Subject: "plc.setpoint", Table: TableHolding, Address: 20, Scale: 0.1, Writable: true},
		{Name: "limit", Table: TableHolding, Address: 30, Type: TypeFloat32, Writable: true},
		{Name: "refused", Table: TableHolding, Address: 2000, Writable: true},
	}
}

func fillPLC(b *bank) {
	b.setHolding(0, uint16(0xffff&-215)) // -21.5
	f := math.Float32bits(3.25)
	b.setHolding(1, uint16(f>>16), uint16(f))
	b.setHolding(3, 0x5678, 0x1234) // 0x12345678 low word first
	b.mu.Lock()
	b.input[10], b.input[11] = 0xffff, 0xfffe // -2
	b.coils[3] = true
	b.discrete[0] = true
	b.mu.Unlock()
	b.setHolding(20, 215)
}

// TestRTU: the test plays an RTU slave over a pty; every table and type
// arrives decoded on its subject; a change within the deadband is not
// republished, one beyond it is; writes (06, 16, 05, 15) reach the device
// and their replies (or the device's exception) reach the requester.
func TestRTU(t *testing.T) {
	tb := newTestBroker(t)
	link := rtuLink(t)
	plc := newBank()
	fillPLC(plc)
	newRTUSlave(t, link, units{7: plc})
	subs := map[string]<-chan *nats.Msg{}
	for _, r := range plcRegisters() {
		if r.Subject != "" {
			subs[r.Name] = tb.subscribe(t, r.Subject)
		}
	}
	b := mustNew(t, Config{RTU: Line{Path: link, Baud: 115200}, Timeout: 500 * time.Millisecond, Devices: []Device{{
		Name: "plc", Unit: 7, PollInterval: 20 * time.Millisecond, CommandSubject: "plc.write", Registers: plcRegisters(),
	}}})
	st := runBridge(t, b, tb)

	want := map[string][2]any{
		"temp": {-21.5, float64(-215)}, "flow": {3.25, 3.25}, "energy": {float64(0x12345678), float64(0x12345678)},
		"offset": {float64(-2), float64(-2)}, "pump": {true, true}, "door": {true, true}, "setpoint": {21.5, float64(215)},
	}
	for name, w := range want {
		p := value(t, next(t, subs[name], name))
		if p.Value != w[0] || p.Raw != w[1] {
			t.Fatalf("%s = %v (raw %v), want %v (raw %v)", name, p.Value, p.Raw, w[0], w[1])
		}
	}

	// Within the deadband (0.5): not republished; beyond it: published.
	reads := make(chan time.Time, 16)
	plc.mu.Lock()
	plc.reads = reads
	plc.mu.Unlock()
	plc.setHolding(0, uint16(0xffff&-219))
	for range 4 { // two polls of both holding blocks: the change was read
		select {
		case <-reads:
		case <-time.After(10 * time.Second):
			t.Fatal("no more polls")
		}
	}
	none(t, subs["temp"], "a change of 0.4 with deadband 0.5")
	plc.setHolding(0, uint16(0xffff&-221))
	if p := value(t, next(t, subs["temp"], "temp beyond the deadband")); p.Value != -22.1 {
		t.Fatalf("temp = %v, want -22.1", p.Value)
	}
	none(t, subs["flow"], "an unchanged value")

	res := request(t, tb.nc, "plc.write", `{"register":"setpoint","value":22.4}`)
	if !res.OK || res.Function != 6 || plc.getHolding(20) != 224 {
		t.Fatalf("write setpoint: %+v, register %d", res, plc.getHolding(20))
	}
	if p := value(t, next(t, subs["setpoint"], "setpoint after the write")); p.Value != 22.4 {
		t.Fatalf("setpoint = %v", p.Value)
	}
	res = request(t, tb.nc, "plc.write", `{"register":"limit","value":1.5}`)
	f := math.Float32bits(1.5)
	if !res.OK || res.Function != 16 || plc.getHolding(30) != uint16(f>>16) || plc.getHolding(31) != uint16(f) {
		t.Fatalf("write limit: %+v", res)
	}
	res = request(t, tb.nc, "plc.write", `{"register":"pump","value":false}`)
	if !res.OK || res.Function != 5 || plc.getCoil(3) {
		t.Fatalf("write pump: %+v", res)
	}
	res = request(t, tb.nc, "plc.write", `{"register":"pump","value":[true,false,true]}`)
	if !res.OK || res.Function != 15 || !plc.getCoil(3) || plc.getCoil(4) || !plc.getCoil(5) {
		t.Fatalf("write coils: %+v", res)
	}
	res = request(t, tb.nc, "plc.write", `{"register":"refused","value":1}`)
	if res.OK || res.Exception != "illegal data address" {
		t.Fatalf("write to a refused address: %+v", res)
	}
	for _, bad := range []string{`{"register":"flow","value":1}`, `{"register":"setpoint","value":1e9}`, `nope`, `{"register":"pump","value":3}`} {
		if res := request(t, tb.nc, "plc.write", bad); res.OK || res.Error == "" {
			t.Fatalf("bad write %s: %+v", bad, res)
		}
	}
	dev := b.Devices()[0]
	if dev.Exceptions != 1 || dev.LastException != "illegal data address" || dev.Writes != 4 {
		t.Fatalf("device status = %+v", dev)
	}
	snap := st.Snapshot()
	require.Equal(t, snap.Out, uint64(4))
	require.Equal(t, snap.Drops[bridge.DropRejected], uint64(5))
	require.Equal(t, snap.State, bridge.StateConnected)
}

// TestRTUExceptionsAndTimeouts: a block the device refuses counts an
// exception for that device and the rest is still published; a unit
// that never answers counts timeouts for itself only.
func TestRTUExceptionsAndTimeouts(t *testing.T) {
	tb := newTestBroker(t)
	link := rtuLink(t)
	plc := newBank()
	plc.refuseFrom = 100
	plc.setHolding(5, 42)
	newRTUSlave(t, link, units{1: plc})
	good := tb.subscribe(t, "a.good")
	b := mustNew(t, Config{RTU: Line{Path: link, Baud: 115200}, Timeout: 50 * time.Millisecond, Devices: []Device{
		{Name: "a", Unit: 1, PollInterval: 10 * time.Millisecond, Registers: []Register{
			{Name: "good", Subject: "a.good", Table: TableHolding, Address: 5},
			{Name: "bad", Subject: "a.bad", Table: TableHolding, Address: 200},
		}},
		{Name: "absent", Unit: 9, PollInterval: 30 * time.Millisecond, Registers: []Register{
			{Name: "x", Subject: "absent.x", Table: TableInput, Address: 0},
		}},
	}})
	st := runBridge(t, b, tb)
	if p := value(t, next(t, good, "good register")); p.Value != float64(42) {
		t.Fatalf("good = %v", p.Value)
	}
	// Every exception and timeout also sets the bridge's last error.
	waitFor(t, st, "exceptions and timeouts", func(bridge.Snapshot) bool {
		d := b.Devices()
		return d[0].Exceptions >= 2 && d[1].Timeouts >= 2
	})
	d := b.Devices()
	if d[0].Timeouts != 0 || d[1].Exceptions != 0 || d[0].LastException != "illegal data address" || d[1].LastError == "" {
		t.Fatalf("devices = %+v", d)
	}
	require.Equal(t, st.Snapshot().Reconnects, uint64(0), "reconnects (the good unit keeps the bus alive)")
}

// TestRTUDeviceVanishes: the adapter is unplugged (pty closed, symlink
// removed); the bridge goes disconnected, and when a device comes back
// behind the same name it resumes by itself with a reconnect counted,
// publishing the new device's values and nothing corrupt.
func TestRTUDeviceVanishes(t *testing.T) {
	tb := newTestBroker(t)
	link := rtuLink(t)
	plc := newBank()
	plc.setHolding(0, 1)
	slave := newRTUSlave(t, link, units{1: plc})
	vals := tb.subscribe(t, "v.x")
	b := mustNew(t, Config{RTU: Line{Path: link, Baud: 115200}, Timeout: 50 * time.Millisecond, Devices: []Device{
		{Name: "d", Unit: 1, PollInterval: 10 * time.Millisecond, Registers: []Register{
			{Name: "x", Subject: "v.x", Table: TableHolding, Address: 0},
		}},
	}})
	st := runBridge(t, b, tb)
	if p := value(t, next(t, vals, "first value")); p.Value != float64(1) {
		t.Fatalf("x = %v", p.Value)
	}
	slave.unplug()
	require.NoError(t, os.Remove(link))
	waitFor(t, st, "the bridge to notice", func(s bridge.Snapshot) bool { return s.State != bridge.StateConnected })

	plc2 := newBank()
	plc2.setHolding(0, 2)
	newRTUSlave(t, link, units{1: plc2})
	if p := value(t, next(t, vals, "value after the replug")); p.Value != float64(2) {
		t.Fatalf("x after the replug = %v", p.Value)
	}
	snap := st.Snapshot()
	require.Equal(t, snap.Reconnects, uint64(1))
	require.Equal(t, snap.State, bridge.StateConnected)
	none(t, vals, "after the new value")
}

// TestTCP: polling and writing a Modbus TCP slave (simonvetter/modbus's
// server), values published plain; the slave stopped and started again
// on the same address: the bridge reconnects by itself.
func TestTCP(t *testing.T) {
	tb := newTestBroker(t)
	plc := newBank()
	fillPLC(plc)
	addr, srv := startTCPSlave(t, plc, "")
	temp := tb.subscribe(t, "plc.temp")
	pump := tb.subscribe(t, "plc.pump")
	b := mustNew(t, Config{TCP: addr, Plain: true, Timeout: 200 * time.Millisecond, Devices: []Device{{
		Name: "plc", Unit: 1, PollInterval: 20 * time.Millisecond, CommandSubject: "plc.write", Registers: plcRegisters(),
	}}})
	st := runBridge(t, b, tb)
	require.Equal(t, string(next(t, temp, "temp").Data), "-21.5")
	require.Equal(t, string(next(t, pump, "pump").Data), "true")

	res := request(t, tb.nc, "plc.write", `{"register":"setpoint","value":[1.5, 2.5]}`)
	if !res.OK || res.Function != 16 || plc.getHolding(20) != 15 || plc.getHolding(21) != 25 {
		t.Fatalf("write: %+v", res)
	}

	require.NoError(t, srv.Stop())
	waitFor(t, st, "the bridge to lose the slave", func(s bridge.Snapshot) bool { return s.State != bridge.StateConnected })
	plc.setHolding(0, 100)
	startTCPSlave(t, plc, addr)
	require.Equal(t, string(next(t, temp, "temp after the restart").Data), "10")
	require.Equal(t, st.Snapshot().Reconnects, uint64(1))
}

// TestRTUBadCRC: answers whose CRC is wrong are counted as bad frames
// for the device and never published; once the line is clean again the
// value arrives.
func TestRTUBadCRC(t *testing.T) {
	tb := newTestBroker(t)
	link := rtuLink(t)
	plc := newBank()
	plc.setHolding(0, 77)
	slave := newRTUSlave(t, link, units{1: plc})
	slave.corrupt.Store(true)
	vals := tb.subscribe(t, "crc.x")
	b := mustNew(t, Config{RTU: Line{Path: link, Baud: 115200}, Timeout: 100 * time.Millisecond, Devices: []Device{
		{Name: "d", Unit: 1, PollInterval: 10 * time.Millisecond, Registers: []Register{
			{Name: "x", Subject: "crc.x", Table: TableHolding, Address: 0},
		}},
	}})
	st := runBridge(t, b, tb)
	waitFor(t, st, "bad frames", func(s bridge.Snapshot) bool { return s.BadFrames >= 3 })
	none(t, vals, "answers with a bad CRC")
	require.Equal(t, b.Devices()[0].BadFrames >= 3, true, "device bad frames")
	require.Equal(t, b.Devices()[0].Polls, uint64(0), "complete polls")
	slave.corrupt.Store(false)
	if p := value(t, next(t, vals, "value after the line is clean")); p.Value != float64(77) {
		t.Fatalf("x = %v", p.Value)
	}
	require.Equal(t, st.Snapshot().Reconnects, uint64(0), "reconnects")
}

// TestDeviceStatuses: the bridge is a bridge.DeviceLister whose statuses
// carry each device's state and counters: waiting before any poll, ok
// after a complete poll, failing while the device does not answer.
func TestDeviceStatuses(t *testing.T) {
	tb := newTestBroker(t)
	link := rtuLink(t)
	plc := newBank()
	plc.setHolding(5, 42)
	newRTUSlave(t, link, units{1: plc})
	b := mustNew(t, Config{RTU: Line{Path: link, Baud: 115200}, Timeout: 50 * time.Millisecond, Devices: []Device{
		{Name: "good", Unit: 1, PollInterval: 10 * time.Millisecond, Registers: []Register{
			{Name: "r", Subject: "good.r", Table: TableHolding, Address: 5},
		}},
		{Name: "absent", Unit: 9, PollInterval: 30 * time.Millisecond, Registers: []Register{
			{Name: "x", Subject: "absent.x", Table: TableInput, Address: 0},
		}},
	}})
	var lister bridge.DeviceLister = b
	before := lister.DeviceStatuses()
	require.Equal(t, len(before), 2)
	require.Equal(t, before[0].State, bridge.DeviceWaiting, "good before Run")
	require.Equal(t, before[1].State, bridge.DeviceWaiting, "absent before Run")

	st := runBridge(t, b, tb)
	waitFor(t, st, "a complete poll and a timeout", func(bridge.Snapshot) bool {
		d := lister.DeviceStatuses()
		return d[0].Polls >= 1 && d[1].Timeouts >= 1
	})
	d := lister.DeviceStatuses()
	require.Equal(t, d[0].Name, "good")
	require.Equal(t, d[0].State, bridge.DeviceOK, "good")
	require.Equal(t, d[0].LastError, "", "good's last error")
	require.Equal(t, d[1].Name, "absent")
	require.Equal(t, d[1].State, bridge.DeviceFailing, "absent")
	require.Equal(t, d[1].Polls, uint64(0), "absent's polls")
	if d[1].LastError == "" || d[1].LastErrorAt.IsZero() {
		t.Fatalf("absent's last error missing: %+v", d[1])
	}
}
