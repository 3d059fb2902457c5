package monitor

import "time"

// Uplinkz is the /uplinkz document: the store-and-forward uplinks. It is a
// leafbox extension; nats-server has no such endpoint.
type Uplinkz struct {
	ID         string       `json:"server_id"`       // ID is the server's id.
	Now        time.Time    `json:"now"`             // Now is the time of the snapshot.
	NumUplinks int          `json:"num_uplinks"`     // NumUplinks is the number of uplinks listed.
	Uplinks    []UplinkInfo `json:"uplinks"`         // Uplinks lists the uplinks in configuration order; never null.
	Clock      *ClockInfo   `json:"clock,omitempty"` // Clock is the wall clock's trust, which ages the backlog.
}

// UplinkInfo describes one store-and-forward uplink: its outbox and the
// link it forwards over.
type UplinkInfo struct {
	Name             string            `json:"name"`                    // Name is the uplink's configured name.
	State            string            `json:"state"`                   // State is the forwarder's state ("waiting", "forwarding", "backoff", ...).
	LinkState        string            `json:"link_state"`              // LinkState is the leafnode link's state ("connected", "connecting", ...).
	Captured         uint64            `json:"captured"`                // Captured counts messages captured from local publishers.
	Stored           uint64            `json:"stored"`                  // Stored counts captured messages the outbox accepted.
	Forwarded        uint64            `json:"forwarded"`               // Forwarded counts publishes toward the hub, retries included.
	Acked            uint64            `json:"acked"`                   // Acked counts messages the hub acknowledged.
	Dropped          map[string]uint64 `json:"dropped,omitempty"`       // Dropped counts lost messages by reason; only non-zero reasons.
	Retries          uint64            `json:"retries"`                 // Retries counts failed forwarding rounds.
	WrongStream      uint64            `json:"wrong_stream,omitempty"`  // WrongStream counts acks from an unexpected stream.
	InFlight         int               `json:"in_flight"`               // InFlight is the number of messages awaiting an ack.
	BacklogMsgs      uint64            `json:"backlog_msgs"`            // BacklogMsgs is the number of messages in the outbox.
	BacklogBytes     uint64            `json:"backlog_bytes"`           // BacklogBytes is the outbox's size in bytes.
	OldestAgeSeconds float64           `json:"oldest_age_seconds"`      // OldestAgeSeconds is the age of the oldest queued message; 0 when empty.
	LastError        string            `json:"last_error,omitempty"`    // LastError is the last forwarding failure.
	LastErrorAt      *time.Time        `json:"last_error_at,omitempty"` // LastErrorAt is when LastError happened.
}

// buildUplinkz shapes the provider's uplinks.
func buildUplinkz(id string, now time.Time, uplinks []UplinkInfo) *Uplinkz {
	uz := &Uplinkz{ID: id, Now: now.UTC(), Uplinks: make([]UplinkInfo, 0, len(uplinks))}
	uz.Uplinks = append(uz.Uplinks, uplinks...)
	uz.NumUplinks = len(uz.Uplinks)
	return uz
}
