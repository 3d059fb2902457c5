package monitor

import "time"

// DefaultJszLimit is the default limit of /jsz.
const DefaultJszLimit = 1024

// Jsz is the /jsz document. Without a JetStreamProvider it reports
// Disabled with zero statistics, as nats-server does without JetStream.
type Jsz struct {
	JetStreamStats
	ID             string           `json:"server_id"`                 // ID is the server's id; the monitor sets it.
	Now            time.Time        `json:"now"`                       // Now is the time of the report; the monitor sets it.
	Disabled       bool             `json:"disabled,omitempty"`        // Disabled reports that JetStream is off.
	Config         JetStreamConfig  `json:"config"`                    // Config is the active configuration.
	Limits         *JetStreamLimits `json:"limits,omitempty"`          // Limits are the server-wide limits.
	Streams        int              `json:"streams"`                   // Streams is the number of streams.
	Consumers      int              `json:"consumers"`                 // Consumers is the number of consumers.
	Messages       uint64           `json:"messages"`                  // Messages is the number of stored messages.
	Bytes          uint64           `json:"bytes"`                     // Bytes is the size of stored messages.
	AccountDetails []*AccountDetail `json:"account_details,omitempty"` // AccountDetails is one page of accounts (accounts=true or acc).
	Total          int              `json:"total"`                     // Total is the number of accounts before paging.
}

// AccountDetail is one account's JetStream usage in /jsz.
type AccountDetail struct {
	Name string `json:"name"` // Name is the account's name.
	ID   string `json:"id"`   // ID is the account's id (its name, without operator mode).
	JetStreamStats
	Streams []StreamDetail `json:"stream_detail,omitempty"` // Streams describes the account's streams (streams=true).
}

// StreamDetail is one stream in /jsz. Config, State and Consumers hold the
// JetStream API's own types (the stream configuration, stream state and
// consumer info documents), which the monitor passes through unchanged.
type StreamDetail struct {
	Name      string    `json:"name"`                      // Name is the stream's name.
	Created   time.Time `json:"created"`                   // Created is when the stream was created.
	Cluster   any       `json:"cluster,omitempty"`         // Cluster is the stream's cluster info, if clustered.
	Config    any       `json:"config,omitempty"`          // Config is the stream configuration (config=true).
	State     any       `json:"state,omitempty"`           // State is the stream state.
	Consumers []any     `json:"consumer_detail,omitempty"` // Consumers are the consumer infos (consumers=true).
}

// JszOptions are the /jsz query parameters, with the defaults applied:
// Offset is at least 0, Limit defaults to DefaultJszLimit, Consumers implies
// Streams, and Streams without Account implies Accounts.
type JszOptions struct {
	Account          string // Account selects one account (acc).
	Accounts         bool   // Accounts lists account details (accounts).
	Streams          bool   // Streams lists stream details (streams).
	Consumers        bool   // Consumers lists consumer details (consumers).
	DirectConsumers  bool   // DirectConsumers lists direct consumers (direct-consumers).
	Config           bool   // Config includes stream configurations (config).
	LeaderOnly       bool   // LeaderOnly answers only on the meta leader (leader-only).
	Offset           int    // Offset skips that many accounts (offset).
	Limit            int    // Limit bounds the accounts listed (limit).
	RaftGroups       bool   // RaftGroups includes Raft group names (raft).
	StreamLeaderOnly bool   // StreamLeaderOnly lists only streams this server leads (stream-leader-only).
}

// normalize applies the defaults nats-server applies.
func (o *JszOptions) normalize() {
	o.Offset = max(o.Offset, 0)
	if o.Limit <= 0 {
		o.Limit = DefaultJszLimit
	}
	if o.Consumers {
		o.Streams = true
	}
	if o.Streams && o.Account == "" {
		o.Accounts = true
	}
}
