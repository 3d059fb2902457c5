package monitor

import "time"

// DownlinkProvider is implemented by a Provider whose server consumes hub
// streams into local subjects through downlinks. /uplinkz lists them under
// "downlinks"; without it the list is left out.
type DownlinkProvider interface {
	// Downlinks returns a snapshot of every downlink, in configuration
	// order.
	Downlinks() []DownlinkInfo
}

// DownlinkInfo describes one downlink: a durable pull consumer on a hub
// stream delivering into local subjects.
type DownlinkInfo struct {
	Name        string     `json:"name"`                    // Name is the downlink's configured name.
	State       string     `json:"state"`                   // State is the consumer loop's state ("waiting", "pulling", "backoff", ...).
	LinkState   string     `json:"link_state"`              // LinkState is the leafnode link's state.
	Stream      string     `json:"stream"`                  // Stream is the hub stream consumed.
	Durable     string     `json:"durable"`                 // Durable is the hub consumer's durable name.
	Delivered   uint64     `json:"delivered"`               // Delivered counts messages delivered locally.
	Acked       uint64     `json:"acked"`                   // Acked counts acks the hub confirmed.
	Redelivered uint64     `json:"redelivered"`             // Redelivered counts messages the hub sent more than once.
	Duplicates  uint64     `json:"duplicates"`              // Duplicates counts redeliveries of messages delivered already, not delivered again.
	Failed      uint64     `json:"failed"`                  // Failed counts local deliveries that failed and were left to the hub to resend.
	Skipped     uint64     `json:"skipped,omitempty"`       // Skipped counts failed messages the hub gave up on (max_deliver).
	Resends     uint64     `json:"resends,omitempty"`       // Resends counts times the hub was asked to resend at once after a link loss.
	Pending     uint64     `json:"pending"`                 // Pending is the hub's count of messages after the last one received.
	LastSeq     uint64     `json:"last_seq"`                // LastSeq is the hub stream sequence last delivered.
	LastError   string     `json:"last_error,omitempty"`    // LastError is the last failure.
	LastErrorAt *time.Time `json:"last_error_at,omitempty"` // LastErrorAt is when LastError happened.
}
