package monitor

import (
	"net/http"
	"sort"
	"time"
)

// BridgezPath serves Bridgez, a leafbox extension.
const BridgezPath = "/bridgez"

// BridgeProvider is implemented by a Provider whose server runs bridges
// (MQTT brokers, serial ports, Modbus devices). Without it /bridgez lists
// none and /metrics has no leafbox_bridge_* families.
type BridgeProvider interface {
	// Bridges returns a snapshot of every running bridge, in
	// configuration order, with Drops holding every drop reason (zeros
	// too). The monitor fills LastErrorAgeSeconds.
	Bridges() []BridgeInfo
}

// Bridgez is the /bridgez document: the bridges between devices and
// subjects. It is a leafbox extension; nats-server has no such endpoint.
//
//	{
//	  "server_id": "NA...",
//	  "now": "2026-12-01T10:00:00Z",
//	  "num_bridges": 1,
//	  "bridges": [
//	    {
//	      "kind": "mqtt", "name": "site", "account": "",
//	      "state": "connected", "since": "2026-12-01T09:59:00Z",
//	      "in": 120, "out": 7, "bad_frames": 0, "reconnects": 2,
//	      "drops": {"bad_frame": 0, "not_connected": 1, "queue_full": 0, "rejected": 0, "too_large": 0},
//	      "last_error": "dial tcp 10.0.0.5:1883: connection refused",
//	      "last_error_at": "2026-12-01T09:58:30Z",
//	      "last_error_age_seconds": 90
//	    },
//	    {
//	      "kind": "modbus", "name": "plc", "account": "",
//	      "state": "connected", ...,
//	      "devices": [
//	        {"name": "pump", "state": "ok", "polls": 310, "timeouts": 0, "exceptions": 0, "bad_frames": 0, "writes": 2},
//	        {"name": "meter", "state": "failing", "polls": 12, "timeouts": 40, "exceptions": 1, "bad_frames": 0, "writes": 0,
//	         "last_error": "modbus: device meter (unit 9): read: timeout", "last_error_at": "2026-12-01T09:59:58Z",
//	         "last_exception": "illegal data address"}
//	      ]
//	    }
//	  ]
//	}
//
// state is "starting", "connected", "disconnected" or "stopped"; since is
// when it was entered. in counts messages from the device side into NATS,
// out messages from NATS the device accepted; drops counts, by reason,
// messages not delivered (every reason is present, zeros too). last_error,
// last_error_at and last_error_age_seconds are absent while the bridge
// has had no error. devices is present only for a bridge with devices of
// its own (a Modbus bridge's slaves), in configuration order: state is
// "waiting" (not polled yet), "ok" (the last poll was answered in full) or
// "failing" (the last request failed); polls counts complete polls;
// timeouts, exceptions and bad_frames count failed requests; writes counts
// accepted writes; last_error, last_error_at and last_exception are absent
// while there was none. bridges is never null.
type Bridgez struct {
	ID         string       `json:"server_id"`   // ID is the server's id.
	Now        time.Time    `json:"now"`         // Now is the time of the snapshot.
	NumBridges int          `json:"num_bridges"` // NumBridges is the number of bridges listed.
	Bridges    []BridgeInfo `json:"bridges"`     // Bridges lists the bridges in configuration order; never null.
}

// BridgeInfo describes one bridge: its identity, state and counters.
type BridgeInfo struct {
	Kind       string            `json:"kind"`                 // Kind is "mqtt", "serial" or "modbus".
	Name       string            `json:"name"`                 // Name is the bridge's configured name, unique within its kind.
	Account    string            `json:"account"`              // Account is the account it publishes in; "" is the global account.
	State      string            `json:"state"`                // State is "starting", "connected", "disconnected" or "stopped".
	Since      time.Time         `json:"since"`                // Since is when State was entered.
	In         uint64            `json:"in"`                   // In counts messages from the device side into NATS.
	Out        uint64            `json:"out"`                  // Out counts messages from NATS the device side accepted.
	BadFrames  uint64            `json:"bad_frames"`           // BadFrames counts invalid frames from the device.
	Reconnects uint64            `json:"reconnects"`           // Reconnects counts connections of the device side after the first.
	Drops      map[string]uint64 `json:"drops"`                // Drops counts undelivered messages by reason; every reason, zeros too.
	LastError  string            `json:"last_error,omitempty"` // LastError is the bridge's last error.
	// LastErrorAt is when LastError happened.
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
	// LastErrorAgeSeconds is LastError's age at Now.
	LastErrorAgeSeconds float64 `json:"last_error_age_seconds,omitempty"`
	// Devices lists the bridge's own devices (a Modbus bridge's slaves);
	// nil, and absent, for a bridge without.
	Devices []BridgeDevice `json:"devices,omitempty"`
}

// BridgeDevice describes one device behind a bridge.
type BridgeDevice struct {
	Name       string `json:"name"`       // Name is the device's configured name.
	State      string `json:"state"`      // State is "waiting", "ok" or "failing".
	Polls      uint64 `json:"polls"`      // Polls counts complete polls.
	Timeouts   uint64 `json:"timeouts"`   // Timeouts counts requests not answered in time.
	Exceptions uint64 `json:"exceptions"` // Exceptions counts requests answered with a protocol exception.
	BadFrames  uint64 `json:"bad_frames"` // BadFrames counts malformed answers.
	Writes     uint64 `json:"writes"`     // Writes counts write requests the device accepted.
	// MissedPolls counts slots of the device's poll schedule skipped
	// because the poll before overran.
	MissedPolls uint64 `json:"missed_polls"`
	// LastError is the device's last failure; absent while it had none.
	LastError string `json:"last_error,omitempty"`
	// LastErrorAt is when LastError happened.
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
	// LastException names the last protocol exception.
	LastException string `json:"last_exception,omitempty"`
}

// buildBridgez shapes the provider's bridges.
func buildBridgez(id string, now time.Time, bridges []BridgeInfo) *Bridgez {
	bz := &Bridgez{ID: id, Now: now.UTC(), Bridges: make([]BridgeInfo, 0, len(bridges))}
	for _, b := range bridges {
		if b.Drops == nil {
			b.Drops = map[string]uint64{}
		}
		if b.LastErrorAt != nil {
			b.LastErrorAgeSeconds = max(now.Sub(*b.LastErrorAt).Seconds(), 0)
		}
		bz.Bridges = append(bz.Bridges, b)
	}
	bz.NumBridges = len(bz.Bridges)
	return bz
}

// bridges returns the provider's bridges, or nil.
func (h *handler) bridges() []BridgeInfo {
	if bp, ok := h.p.(BridgeProvider); ok {
		return bp.Bridges()
	}
	return nil
}

func (h *handler) serveBridgez(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, r, http.StatusOK, buildBridgez(h.p.ServerID(), h.now(), h.bridges()), true)
}

// writeBridgeMetrics writes the leafbox_bridge_* families, one sample per
// bridge labelled kind and name (and reason for drops). It writes nothing
// without bridges.
func writeBridgeMetrics(m *MetricWriter, bridges []BridgeInfo) {
	if len(bridges) == 0 {
		return
	}
	family := func(name, typ, help string, value func(BridgeInfo) float64) {
		m.Family(name, typ, help)
		for _, b := range bridges {
			m.Sample(name, value(b), "kind", b.Kind, "name", b.Name)
		}
	}
	family("leafbox_bridge_connected", Gauge, "1 when the bridge's device side is connected, else 0.",
		func(b BridgeInfo) float64 {
			if b.State == "connected" {
				return 1
			}
			return 0
		})
	family("leafbox_bridge_in_msgs_total", Counter, "Messages from the device side into NATS.",
		func(b BridgeInfo) float64 { return float64(b.In) })
	family("leafbox_bridge_out_msgs_total", Counter, "Messages from NATS the device side accepted.",
		func(b BridgeInfo) float64 { return float64(b.Out) })
	family("leafbox_bridge_bad_frames_total", Counter, "Invalid frames from the device side.",
		func(b BridgeInfo) float64 { return float64(b.BadFrames) })
	family("leafbox_bridge_reconnects_total", Counter, "Connections of the device side after the first.",
		func(b BridgeInfo) float64 { return float64(b.Reconnects) })
	m.Family("leafbox_bridge_dropped_total", Counter, "Messages not delivered, by reason.")
	for _, b := range bridges {
		reasons := make([]string, 0, len(b.Drops))
		for r := range b.Drops {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		for _, r := range reasons {
			m.Sample("leafbox_bridge_dropped_total", float64(b.Drops[r]), "kind", b.Kind, "name", b.Name, "reason", r)
		}
	}
	family("leafbox_bridge_last_error_timestamp_seconds", Gauge, "Unix time of the bridge's last error; 0 when it had none.",
		func(b BridgeInfo) float64 {
			if b.LastErrorAt == nil {
				return 0
			}
			return float64(b.LastErrorAt.UnixNano()) / 1e9
		})
}
