package monitor

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// bridgeProvider is the fixture with bridges.
type bridgeProvider struct {
	*fakeProvider
	bridges []BridgeInfo
}

func (p bridgeProvider) Bridges() []BridgeInfo { return p.bridges }

func newBridgeFixture() bridgeProvider {
	errAt := testNow.Add(-90 * time.Second)
	drops := func(notConnected uint64) map[string]uint64 {
		return map[string]uint64{"bad_frame": 0, "not_connected": notConnected, "rejected": 0, "too_large": 0, "queue_full": 0}
	}
	return bridgeProvider{fakeProvider: newFixture(), bridges: []BridgeInfo{
		{Kind: "mqtt", Name: "site", State: "disconnected", Since: testNow.Add(-time.Minute), In: 120, Out: 7, Reconnects: 2,
			Drops: drops(3), LastError: "dial tcp 10.0.0.5:1883: connection refused", LastErrorAt: &errAt},
		{Kind: "serial", Name: "gps", Account: "ops", State: "connected", Since: t0, In: 5, BadFrames: 1, Drops: drops(0)},
	}}
}

// TestBridgez: the document lists the provider's bridges in order, with
// every drop reason, and the last error's age at now.
func TestBridgez(t *testing.T) {
	h := newTestHandler(t, newBridgeFixture())
	res, body := get(t, h, BridgezPath)
	require.Equal(t, res.StatusCode, http.StatusOK, "status")
	for _, want := range []string{
		`"num_bridges": 2`, `"kind": "mqtt"`, `"name": "site"`, `"account": ""`, `"state": "disconnected"`,
		`"in": 120`, `"out": 7`, `"reconnects": 2`, `"not_connected": 3`, `"queue_full": 0`,
		`"last_error": "dial tcp 10.0.0.5:1883: connection refused"`, `"last_error_at": "2025-01-01T09:58:30Z"`,
		`"last_error_age_seconds": 90`, `"account": "ops"`, `"bad_frames": 1`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/bridgez lacks %s:\n%s", want, body)
		}
	}
	bz := getStruct[Bridgez](t, h, BridgezPath)
	require.Equal(t, bz.Bridges[1].LastErrorAt == nil, true, "no error time without an error")
	require.Equal(t, bz.Bridges[1].LastErrorAgeSeconds, 0.0, "no error age without an error")
	require.Equal(t, strings.Count(string(body), "last_error_age_seconds"), 1, "age only where there is an error")

	// Without a BridgeProvider the list is empty, not null.
	_, body = get(t, newTestHandler(t, newFixture()), BridgezPath)
	if !strings.Contains(string(body), `"bridges": []`) || !strings.Contains(string(body), `"num_bridges": 0`) {
		t.Fatalf("/bridgez without bridges: %s", body)
	}
}

// TestBridgeMetrics: one sample per bridge, labelled kind and name, drops
// with a reason label for every reason.
func TestBridgeMetrics(t *testing.T) {
	_, body := get(t, newTestHandler(t, newBridgeFixture()), MetricsPath)
	for _, want := range []string{
		"# TYPE leafbox_bridge_connected gauge",
		`leafbox_bridge_connected{kind="mqtt",name="site"} 0`,
		`leafbox_bridge_connected{kind="serial",name="gps"} 1`,
		"# TYPE leafbox_bridge_in_msgs_total counter",
		`leafbox_bridge_in_msgs_total{kind="mqtt",name="site"} 120`,
		`leafbox_bridge_out_msgs_total{kind="mqtt",name="site"} 7`,
		`leafbox_bridge_bad_frames_total{kind="serial",name="gps"} 1`,
		`leafbox_bridge_reconnects_total{kind="mqtt",name="site"} 2`,
		`leafbox_bridge_dropped_total{kind="mqtt",name="site",reason="not_connected"} 3`,
		`leafbox_bridge_dropped_total{kind="serial",name="gps",reason="queue_full"} 0`,
		`leafbox_bridge_last_error_timestamp_seconds{kind="mqtt",name="site"} 1735725510`,
		`leafbox_bridge_last_error_timestamp_seconds{kind="serial",name="gps"} 0`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	require.Equal(t, strings.Count(string(body), "leafbox_bridge_dropped_total{"), 10, "drop samples (5 reasons × 2 bridges)")
	_, body = get(t, newTestHandler(t, newFixture()), MetricsPath)
	if strings.Contains(string(body), "leafbox_bridge_") {
		t.Fatal("bridge metrics without bridges")
	}
}

// TestBridgezDevices: a bridge with devices lists them, each with its
// name, state and counters, the last error only where there is one; a
// bridge without devices has no devices key.
func TestBridgezDevices(t *testing.T) {
	errAt := testNow.Add(-2 * time.Second)
	p := newBridgeFixture()
	p.bridges = append(p.bridges, BridgeInfo{Kind: "modbus", Name: "plc", State: "connected", Since: t0, Devices: []BridgeDevice{
		{Name: "pump", State: "ok", Polls: 310, Writes: 2},
		{Name: "meter", State: "failing", Polls: 12, MissedPolls: 3, Timeouts: 40, Exceptions: 1,
			LastError: "modbus: device meter (unit 9): read: timeout", LastErrorAt: &errAt, LastException: "illegal data address"},
	}})
	h := newTestHandler(t, p)
	_, body := get(t, h, BridgezPath)
	for _, want := range []string{
		`"devices": [`, `"name": "pump"`, `"state": "ok"`, `"polls": 310`, `"writes": 2`,
		`"name": "meter"`, `"state": "failing"`, `"missed_polls": 3`, `"timeouts": 40`, `"exceptions": 1`,
		`"last_error": "modbus: device meter (unit 9): read: timeout"`, `"last_error_at": "2025-01-01T09:59:58Z"`,
		`"last_exception": "illegal data address"`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/bridgez lacks %s:\n%s", want, body)
		}
	}
	require.Equal(t, strings.Count(string(body), `"devices"`), 1, "devices only on the bridge that has them")
	require.Equal(t, strings.Count(string(body), `"last_exception"`), 1, "last_exception only where there is one")
	bz := getStruct[Bridgez](t, h, BridgezPath)
	require.Equal(t, len(bz.Bridges[2].Devices), 2, "devices")
	require.Equal(t, bz.Bridges[2].Devices[0].LastErrorAt == nil, true, "no error time without an error")
}
