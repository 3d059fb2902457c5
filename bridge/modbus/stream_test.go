package modbus

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/jsapi"
)

// TestTCPCommandStream: write requests from a durable consumer are
// settled by what the device did: a request that is not one, and a write
// the device refuses with an exception, are terminated and counted as
// rejected drops (the refusal in the last error); an accepted write is
// acknowledged and counted out. Nothing is left pending, and the stream
// sends none of them again.
func TestTCPCommandStream(t *testing.T) {
	tb := newTestBroker(t)
	tb.AddStream(t, jsapi.StreamConfig{Name: "PLC_CMD", Subjects: []string{"plc.write"}})
	plc := newBank()
	addr, _ := startTCPSlave(t, plc, "")
	b := mustNew(t, Config{TCP: addr, Timeout: 2 * time.Second, Devices: []Device{{
		Name: "plc", Unit: 1, PollInterval: 20 * time.Millisecond, CommandSubject: "plc.write",
		CommandStream: "PLC_CMD", CommandDurable: "plc", Registers: plcRegisters(),
	}}})
	st := runBridge(t, b, tb)
	bus := tb.Bus(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for _, req := range []string{`not a request`, `{"register":"refused","value":1}`, `{"register":"setpoint","value":[1.5,2.5]}`} {
		_, _, err := bridge.Store(ctx, bus, "plc.write", nil, []byte(req))
		require.NoError(t, err)
	}
	rejected := slices.Index(bridge.DropReasons, bridge.DropRejected)
	waitFor(t, st, "one write out, two rejected", func(s bridge.Snapshot) bool { return s.Out >= 1 && s.Drops[rejected] >= 2 })
	require.Equal(t, plc.getHolding(20), uint16(15))
	require.Equal(t, plc.getHolding(21), uint16(25))
	snap := st.Snapshot()
	require.Equal(t, snap.Out, uint64(1))
	require.Equal(t, snap.Drops[rejected], uint64(2))
	require.Equal(t, b.Devices()[0].Exceptions, uint64(1))
	require.Equal(t, b.Devices()[0].LastException, "illegal data address")
	ci := tb.ConsumerInfo(t, "PLC_CMD", "plc")
	require.Equal(t, ci.AckFloor.Stream, uint64(3))
	require.Equal(t, ci.NumAckPending, 0)
	require.Equal(t, ci.NumPending, uint64(0))
	require.Equal(t, ci.Delivered.Stream, uint64(3))
	require.Equal(t, ci.Delivered.Consumer, uint64(3)) // each delivered once
}

// TestTCPCommandStreamBusy: a write from the stream that the device
// answers "server device busy" is sent again (nak'ed with a delay) until
// the device takes it; it is neither dropped nor acknowledged before.
func TestTCPCommandStreamBusy(t *testing.T) {
	tb := newTestBroker(t)
	tb.AddStream(t, jsapi.StreamConfig{Name: "PLC_CMD", Subjects: []string{"plc.write"}})
	plc := newBank()
	plc.busyWrites = 2
	addr, _ := startTCPSlave(t, plc, "")
	b := mustNew(t, Config{TCP: addr, Timeout: 2 * time.Second, Devices: []Device{{
		Name: "plc", Unit: 1, PollInterval: 20 * time.Millisecond, CommandSubject: "plc.write",
		CommandStream: "PLC_CMD", CommandDurable: "plc", Registers: plcRegisters(),
	}}})
	st := runBridge(t, b, tb)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, _, err := bridge.Store(ctx, tb.Bus(t), "plc.write", nil, []byte(`{"register":"setpoint","value":4.2}`))
	require.NoError(t, err)
	waitFor(t, st, "the write out", func(s bridge.Snapshot) bool { return s.Out >= 1 })
	require.Equal(t, plc.getHolding(20), uint16(42))
	rejected := slices.Index(bridge.DropReasons, bridge.DropRejected)
	require.Equal(t, st.Snapshot().Drops[rejected], uint64(0))
	require.Equal(t, b.Devices()[0].Exceptions, uint64(2))
	ci := tb.ConsumerInfo(t, "PLC_CMD", "plc")
	require.Equal(t, ci.AckFloor.Stream, uint64(1))
	require.Equal(t, ci.Delivered.Consumer, uint64(3)) // twice refused, then taken
}

// TestTCPCommandStreamConsumerDeleted: the durable consumer deleted under
// the bridge ends its Run with the error; the next Run creates it again,
// and writes stored afterwards reach the device.
func TestTCPCommandStreamConsumerDeleted(t *testing.T) {
	tb := newTestBroker(t)
	tb.AddStream(t, jsapi.StreamConfig{Name: "PLC_CMD", Subjects: []string{"plc.write"}})
	plc := newBank()
	addr, _ := startTCPSlave(t, plc, "")
	b := mustNew(t, Config{TCP: addr, Timeout: 2 * time.Second, Devices: []Device{{
		Name: "plc", Unit: 1, PollInterval: 20 * time.Millisecond, CommandSubject: "plc.write",
		CommandStream: "PLC_CMD", CommandDurable: "plc", Registers: plcRegisters(),
	}}})
	st := runBridge(t, b, tb)
	waitFor(t, st, "connected", func(s bridge.Snapshot) bool { return s.State == bridge.StateConnected })
	js, err := tb.nc.JetStream()
	require.NoError(t, err)
	require.NoError(t, js.DeleteConsumer("PLC_CMD", "plc"))
	waitFor(t, st, "the deletion noticed and the bridge back", func(s bridge.Snapshot) bool {
		return s.Reconnects >= 1 && s.State == bridge.StateConnected
	})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, _, err = bridge.Store(ctx, tb.Bus(t), "plc.write", nil, []byte(`{"register":"setpoint","value":7}`))
	require.NoError(t, err)
	waitFor(t, st, "the write out", func(s bridge.Snapshot) bool { return s.Out >= 1 })
	require.Equal(t, plc.getHolding(20), uint16(70))
	if e := st.Snapshot().LastError; !strings.Contains(e, bridge.ErrConsumerDeleted.Error()) {
		t.Fatalf("last error %q, want the consumer's deletion", e)
	}
}

// TestTCPStore: with Store each value is stored in the stream capturing
// its subject. One the stream refuses (full, discard new) is reported
// and counted as a rejected drop, not lost: the device still holds it,
// and it is stored at a later poll once the stream has room.
func TestTCPStore(t *testing.T) {
	tb := newTestBroker(t)
	tb.AddStream(t, jsapi.StreamConfig{Name: "PLC", Subjects: []string{"plc.>"}, MaxMsgs: 1, Discard: jsapi.DiscardNew})
	plc := newBank()
	plc.setHolding(20, 10)
	addr, _ := startTCPSlave(t, plc, "")
	b := mustNew(t, Config{TCP: addr, Plain: true, Store: true, Timeout: 2 * time.Second, Devices: []Device{{
		Name: "plc", Unit: 1, PollInterval: 10 * time.Millisecond,
		Registers: []Register{{Name: "setpoint", Subject: "plc.setpoint", Table: TableHolding, Address: 20}},
	}}})
	st := runBridge(t, b, tb)
	waitFor(t, st, "the first value stored", func(s bridge.Snapshot) bool { return s.In >= 1 })
	stored := func() []string {
		var out []string
		for _, m := range tb.StoredMsgs(t, "PLC") {
			out = append(out, string(m.Data))
		}
		return out
	}
	require.DeepEqual(t, stored(), []string{"10"})

	plc.setHolding(20, 20)
	rejected := slices.Index(bridge.DropReasons, bridge.DropRejected)
	waitFor(t, st, "the refusal reported", func(s bridge.Snapshot) bool { return s.Drops[rejected] >= 1 && s.LastError != "" })
	require.DeepEqual(t, stored(), []string{"10"})
	tb.PurgeStream(t, "PLC")
	waitFor(t, st, "the held value stored", func(s bridge.Snapshot) bool { return s.In >= 2 })
	require.DeepEqual(t, stored(), []string{"20"})
}
