package monitor

import "time"

// Uplinkz is the /uplinkz document: the store-and-forward uplinks. It is a
// leafbox extension; nats-server has no such endpoint.
type Uplinkz struct {
	ID         string       `json:"server_id"`   // ID is the server's id.
	Now        time.Time    `json:"now"`         // Now is the time of the snapshot.
	NumUplinks int          `json:"num_uplinks"` // NumUplinks is the number of uplinks listed.
	Uplinks    []UplinkInfo `json:"uplinks"`     // Uplinks lists the uplinks in configuration order; never null.
	// Clock is the wall clock's trust, which ages the backlog.
	Clock *ClockInfo `json:"clock,omitempty"`
	// Downlinks lists the downlinks in configuration order, when the
	// provider has any.
	Downlinks []DownlinkInfo `json:"downlinks,omitempty"`
	// Limits are the caps on all uplinks together and today's usage;
	// absent without an UplinkLimitsProvider.
	Limits *UplinkLimits `json:"limits,omitempty"`
}

// UplinkLimits describes the caps shared by all uplinks.
type UplinkLimits struct {
	Day         string `json:"day"`                    // Day is the UTC day the usage counts for.
	MaxRate     int64  `json:"max_rate,omitempty"`     // MaxRate is the total cap in bytes per second; 0 is unlimited.
	DailyBudget int64  `json:"daily_budget,omitempty"` // DailyBudget is the total bytes per UTC day; 0 is unlimited.
	BudgetUsed  int64  `json:"budget_used"`            // BudgetUsed is the bytes all uplinks published today.
	Exhausted   bool   `json:"exhausted,omitempty"`    // Exhausted means DailyBudget is used up: only the highest priority flows.
}

// UplinkLimitsProvider is implemented by a Provider whose uplinks share
// caps; /uplinkz then reports them.
type UplinkLimitsProvider interface {
	// UplinkLimits returns the shared caps and usage, or nil.
	UplinkLimits() *UplinkLimits
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

	AckedBytes              uint64  `json:"acked_bytes"`                 // AckedBytes counts the bytes of acknowledged messages.
	AckedPayloadBytes       uint64  `json:"acked_payload_bytes"`         // AckedPayloadBytes counts the payload bytes alone of acknowledged messages.
	WireBytes               int64   `json:"wire_bytes"`                  // WireBytes counts the bytes that crossed the uplink's link both ways, on the socket.
	WireBytesPerPayloadByte float64 `json:"wire_bytes_per_payload_byte"` // WireBytesPerPayloadByte is WireBytes ÷ the acknowledged payload bytes of the link's uplinks: the metered cost of a payload byte.
	RateMsgs                float64 `json:"rate_msgs"`                   // RateMsgs is the drain rate in acknowledged messages per second (moving average).
	RateBytes               float64 `json:"rate_bytes"`                  // RateBytes is the drain rate in acknowledged bytes per second (moving average).
	ETASeconds              float64 `json:"eta_seconds"`                 // ETASeconds estimates the time to drain the backlog; 0 when empty or stalled.
	WatchdogRearms          uint64  `json:"watchdog_rearms"`             // WatchdogRearms counts rounds the stuck-backlog watchdog restarted.
	StreamResets            uint64  `json:"stream_resets"`               // StreamResets counts detected recreations of the hub stream.
	HubStream               string  `json:"hub_stream,omitempty"`        // HubStream is the hub stream of the last new acknowledgement.
	HubSeq                  uint64  `json:"hub_seq,omitempty"`           // HubSeq is the hub sequence of the last new acknowledgement.
	Priority                int     `json:"priority"`                    // Priority is the uplink's class; higher is sent first.
	MaxRate                 int64   `json:"max_rate,omitempty"`          // MaxRate is the uplink's cap in bytes per second; 0 is unlimited.
	DailyBudget             int64   `json:"daily_budget,omitempty"`      // DailyBudget is the uplink's bytes per UTC day; 0 is unlimited.
	BudgetUsed              int64   `json:"budget_used"`                 // BudgetUsed is the bytes the uplink published today (UTC).
	Waiting                 string  `json:"waiting,omitempty"`           // Waiting is why the scheduler holds the uplink: "rate", "priority" or "budget".

	// Dead letters: messages the hub refused for good, moved aside so
	// that the uplink goes on (also counted in Dropped["rejected_by_hub"]).
	DeadLettered            uint64     `json:"dead_lettered"`                        // DeadLettered counts messages moved to the dead-letter store.
	DeadLetterMsgs          uint64     `json:"dead_letter_msgs"`                     // DeadLetterMsgs is how many the dead-letter store holds now.
	Requeued                uint64     `json:"requeued,omitempty"`                   // Requeued counts dead-lettered messages moved back to the outbox.
	Refusals                uint64     `json:"hub_refusals,omitempty"`               // Refusals counts permanent refusals by the hub, each attempt.
	HubDuplicatesUnexpected uint64     `json:"hub_duplicates_unexpected"`            // HubDuplicatesUnexpected counts duplicate PubAcks for messages sent once (id collisions).
	Reordered               uint64     `json:"reordered"`                            // Reordered counts messages the hub stored after one captured later (per-message forwarding only).
	LastRejection           string     `json:"last_rejection,omitempty"`             // LastRejection is the last permanent refusal.
	LastRejectionAt         *time.Time `json:"last_rejection_at,omitempty"`          // LastRejectionAt is when it happened.
	LastRejectionAgeSeconds float64    `json:"last_rejection_age_seconds,omitempty"` // LastRejectionAgeSeconds is its age.
}

// buildUplinkz shapes the provider's uplinks.
func buildUplinkz(id string, now time.Time, uplinks []UplinkInfo) *Uplinkz {
	uz := &Uplinkz{ID: id, Now: now.UTC(), Uplinks: make([]UplinkInfo, 0, len(uplinks))}
	uz.Uplinks = append(uz.Uplinks, uplinks...)
	uz.NumUplinks = len(uz.Uplinks)
	return uz
}
