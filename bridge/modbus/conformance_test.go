package modbus

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/bridgetest"
	"github.com/leafbox/leafbox/core/require"
	mb "github.com/simonvetter/modbus"
)

// TestConformance runs bridgetest's suite against the Modbus bridge over
// Modbus TCP, with the test playing the slave (simonvetter/modbus's
// server). A Modbus device carries numbers, not payloads, so the device
// numbers each payload it meets (1, 2, ...; 0 is the value it holds before
// the case begins) and is a bridgetest.Mapper: the device "sends" a
// payload by holding its number in the uint32 holding register "in"
// (polled, published as JSON {"value":n,...} on Routes.In) and receives
// one as a write request {"register":"out","value":n} on Routes.Out
// (the command subject) that writes its number into "out". It is dropped
// by stopping the server (its connections close) and restored by a new
// server on the same address, and it stalls by answering no request
// until resumed.
func TestConformance(t *testing.T) {
	bridgetest.Run(t, tcpHarness{})
}

type tcpHarness struct{}

// Registers of the suite's device: "in" at 0–1, "out" at 10–11.
const (
	suiteIn  = 0
	suiteOut = 10
)

// NotApplicable implements bridgetest.Inapplicable.
func (tcpHarness) NotApplicable(name string) string {
	switch name {
	case "StoreBeforeAck":
		return "a Modbus device holds a value in a register, it does not send messages: there is no acknowledgement " +
			"to withhold, and a value the stream refuses is not dropped but published again at every poll until " +
			"stored (the latest value wins), so the case's refusal and purge sequence does not exist here; " +
			"TestTCPStore checks what Store does instead"
	}
	return ""
}

func (tcpHarness) Open(t *testing.T, routes bridgetest.Routes) (bridge.Bridge, bridgetest.Device) {
	d := &suiteSlave{got: make(chan []byte, 1<<16), changed: make(chan struct{}), ids: map[string]uint32{},
		names: []string{""}}
	d.start(t, "127.0.0.1:0")
	t.Cleanup(func() { d.Drop(t); d.Resume(t) })
	b, err := New(Config{
		TCP:     d.addr,
		Timeout: 5 * time.Second,
		// The suite publishes 20 writes at once and expects each to
		// reach the device.
		QueueLen: 64,
		Store:    routes.StoreIn,
		Devices: []Device{{
			Name: "dev", Unit: 1, PollInterval: 5 * time.Millisecond, CommandSubject: routes.Out,
			CommandStream: routes.OutStream, CommandDurable: routes.OutDurable,
			Registers: []Register{
				{Name: "in", Subject: routes.In, Table: TableHolding, Address: suiteIn, Type: TypeUint32},
				{Name: "out", Table: TableHolding, Address: suiteOut, Type: TypeUint32, Writable: true},
			},
		}},
	})
	require.NoError(t, err)
	return observedBridge{b, d}, d
}

// observedBridge hands the Status the Runner gives the bridge to the
// device, so that a Send can return once the bridge published the value.
type observedBridge struct {
	*Bridge
	dev *suiteSlave
}

func (o observedBridge) Run(ctx context.Context, env bridge.Env) error {
	o.dev.status.Store(env.Status)
	return o.Bridge.Run(ctx, env)
}

// suiteSlave is the suite's Modbus TCP device.
type suiteSlave struct {
	addr   string
	got    chan []byte
	status atomic.Pointer[bridge.Status]

	mu      sync.Mutex
	srv     *mb.ModbusServer
	holding [32]uint16
	stalled bool
	drops   int           // Drops so far: a request held across one is lost with it
	changed chan struct{} // closed and replaced at every change of stalled
	ids     map[string]uint32
	names   []string // by number; names[0] is the value before any Send
}

// start serves the device on addr (port 0 the first time).
func (d *suiteSlave) start(t *testing.T, addr string) {
	t.Helper()
	srv, err := mb.NewServer(&mb.ServerConfiguration{URL: "tcp://" + addr, MaxClients: 4, Timeout: time.Minute,
		Logger: quietLog()}, d)
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	d.mu.Lock()
	d.srv, d.addr = srv, listenAddr(srv)
	d.mu.Unlock()
}

// number is payload's number, given at its first use.
func (d *suiteSlave) number(payload string) uint32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	n, ok := d.ids[payload]
	if !ok {
		n = uint32(len(d.names))
		d.ids[payload] = n
		d.names = append(d.names, payload)
	}
	return n
}

// payload is number n's payload.
func (d *suiteSlave) payload(n uint32) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if n == 0 || int(n) >= len(d.names) {
		return "", false
	}
	return d.names[n], true
}

// Published implements bridgetest.Mapper: the published JSON's value is
// a payload's number.
func (d *suiteSlave) Published(data []byte) (string, bool) {
	var v struct {
		Value float64 `json:"value"`
	}
	if json.Unmarshal(data, &v) != nil {
		return "(not a value: " + string(data) + ")", true // fails the comparison, visibly
	}
	return d.payload(uint32(v.Value))
}

// Command implements bridgetest.Mapper: a write request of the
// payload's number into "out".
func (d *suiteSlave) Command(payload string) []byte {
	return fmt.Appendf(nil, `{"register":"out","value":%d}`, d.number(payload))
}

// gate holds a request while the device is stalled; it reports false
// when the device was dropped meanwhile: the request was never taken,
// and goes unanswered with the closed connection.
func (d *suiteSlave) gate() bool {
	d.mu.Lock()
	drops := d.drops
	d.mu.Unlock()
	for {
		d.mu.Lock()
		stalled, ch, dropped := d.stalled, d.changed, d.drops != drops
		d.mu.Unlock()
		if dropped {
			return false
		}
		if !stalled {
			return true
		}
		<-ch
	}
}

func (d *suiteSlave) HandleCoils(*mb.CoilsRequest) ([]bool, error) { return nil, mb.ErrIllegalFunction }

func (d *suiteSlave) HandleDiscreteInputs(*mb.DiscreteInputsRequest) ([]bool, error) {
	return nil, mb.ErrIllegalFunction
}

func (d *suiteSlave) HandleInputRegisters(*mb.InputRegistersRequest) ([]uint16, error) {
	return nil, mb.ErrIllegalFunction
}

func (d *suiteSlave) HandleHoldingRegisters(req *mb.HoldingRegistersRequest) ([]uint16, error) {
	if !d.gate() {
		return nil, mb.ErrServerDeviceFailure
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if int(req.Addr)+int(req.Quantity) > len(d.holding) {
		return nil, mb.ErrIllegalDataAddress
	}
	if !req.IsWrite {
		return append([]uint16{}, d.holding[req.Addr:req.Addr+req.Quantity]...), nil
	}
	copy(d.holding[req.Addr:], req.Args)
	if req.Addr == suiteOut && req.Quantity == 2 {
		n := uint32(d.holding[suiteOut])<<16 | uint32(d.holding[suiteOut+1])
		if n > 0 && int(n) < len(d.names) {
			d.got <- []byte(d.names[n])
		}
	}
	return nil, nil
}

func (d *suiteSlave) Acknowledges() bool { return false }

// Send holds the payload's number in "in" and returns once the bridge has
// published it (or had it refused): Modbus has no acknowledgement, this
// is when it was delivered. The register keeps the value through a drop.
func (d *suiteSlave) Send(ctx context.Context, payload []byte) error {
	st := d.status.Load()
	if st == nil {
		return fmt.Errorf("modbus suite: the bridge is not running")
	}
	// The first poll publishes the value held before the case (0); wait
	// for it, so that it is not taken for this payload's.
	if err := st.Wait(ctx, func(s bridge.Snapshot) bool { return handled(s) >= 1 }); err != nil {
		return err
	}
	n := d.number(string(payload))
	before := handled(st.Snapshot())
	d.mu.Lock()
	d.holding[suiteIn], d.holding[suiteIn+1] = uint16(n>>16), uint16(n)
	d.mu.Unlock()
	return st.Wait(ctx, func(s bridge.Snapshot) bool { return handled(s) > before })
}

// handled counts the values the bridge is done with: published, or
// refused by the stream.
func handled(s bridge.Snapshot) uint64 {
	return s.In + s.Drops[slices.Index(bridge.DropReasons, bridge.DropRejected)]
}

func (d *suiteSlave) Receive(ctx context.Context) ([]byte, error) {
	select {
	case p := <-d.got:
		return p, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Drop stops the server: its listener and connections close. A request
// held by a stall is then let go unanswered.
func (d *suiteSlave) Drop(t *testing.T) {
	d.mu.Lock()
	srv := d.srv
	d.srv = nil
	d.mu.Unlock()
	if srv == nil {
		return
	}
	_ = srv.Stop()
	d.mu.Lock()
	d.drops++
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}

// Restore serves the device again on the same address.
func (d *suiteSlave) Restore(t *testing.T) { d.start(t, d.addr) }

func (d *suiteSlave) Stall(t *testing.T) { d.setStalled(true) }

func (d *suiteSlave) Resume(t *testing.T) { d.setStalled(false) }

func (d *suiteSlave) setStalled(v bool) {
	d.mu.Lock()
	d.stalled = v
	close(d.changed)
	d.changed = make(chan struct{})
	d.mu.Unlock()
}
