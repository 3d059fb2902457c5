package jsapi

import "time"

// ConsumerConfig is a consumer's configuration as sent in CONSUMER.CREATE
// and echoed in ConsumerInfo. Field names and omitempty choices are
// nats-server's.
type ConsumerConfig struct {
	// Durable is the legacy durable name; when set the consumer is durable
	// and Name must be empty or equal.
	Durable string `json:"durable_name,omitempty"`
	// Name is the consumer's name; a Name without Durable is ephemeral.
	Name string `json:"name,omitempty"`
	// Description is free text.
	Description string `json:"description,omitempty"`
	// DeliverPolicy chooses the starting point.
	DeliverPolicy DeliverPolicy `json:"deliver_policy"`
	// OptStartSeq is the start for DeliverByStartSequence.
	OptStartSeq uint64 `json:"opt_start_seq,omitempty"`
	// OptStartTime is the start for DeliverByStartTime.
	OptStartTime *time.Time `json:"opt_start_time,omitempty"`
	// AckPolicy chooses how deliveries are acknowledged.
	AckPolicy AckPolicy `json:"ack_policy"`
	// AckWait is how long a delivery waits for its ack before redelivery.
	AckWait time.Duration `json:"ack_wait,omitempty"`
	// MaxDeliver bounds deliveries per message; -1 is unlimited.
	MaxDeliver int `json:"max_deliver,omitempty"`
	// BackOff lists redelivery delays; it overrides AckWait.
	BackOff []time.Duration `json:"backoff,omitempty"`
	// FilterSubject restricts delivery to matching subjects.
	FilterSubject string `json:"filter_subject,omitempty"`
	// FilterSubjects restricts delivery to subjects matching any filter.
	FilterSubjects []string `json:"filter_subjects,omitempty"`
	// ReplayPolicy chooses the replay speed.
	ReplayPolicy ReplayPolicy `json:"replay_policy"`
	// RateLimit bounds push delivery in bits per second.
	RateLimit uint64 `json:"rate_limit_bps,omitempty"`
	// SampleFrequency is the ack sampling rate ("30%"); accepted, ignored.
	SampleFrequency string `json:"sample_freq,omitempty"`
	// MaxWaiting bounds outstanding pull requests.
	MaxWaiting int `json:"max_waiting,omitempty"`
	// MaxAckPending bounds unacknowledged deliveries; -1 is unlimited.
	MaxAckPending int `json:"max_ack_pending,omitempty"`
	// FlowControl enables push flow control.
	FlowControl bool `json:"flow_control,omitempty"`
	// HeadersOnly delivers headers and Nats-Msg-Size without payloads.
	HeadersOnly bool `json:"headers_only,omitempty"`
	// MaxRequestBatch bounds a pull request's batch.
	MaxRequestBatch int `json:"max_batch,omitempty"`
	// MaxRequestExpires bounds a pull request's expires.
	MaxRequestExpires time.Duration `json:"max_expires,omitempty"`
	// MaxRequestMaxBytes bounds a pull request's max_bytes.
	MaxRequestMaxBytes int `json:"max_bytes,omitempty"`
	// DeliverSubject makes the consumer a push consumer delivering there.
	DeliverSubject string `json:"deliver_subject,omitempty"`
	// DeliverGroup is the queue group push deliveries are shared by.
	DeliverGroup string `json:"deliver_group,omitempty"`
	// Heartbeat is the idle heartbeat interval (push consumers).
	Heartbeat time.Duration `json:"idle_heartbeat,omitempty"`
	// InactiveThreshold removes the consumer after this long without
	// activity or interest (ephemerals; durables since nats-server 2.9).
	InactiveThreshold time.Duration `json:"inactive_threshold,omitempty"`
	// Replicas is the replication factor; 0 inherits the stream's.
	Replicas int `json:"num_replicas"`
	// MemoryStorage keeps the consumer's state in memory.
	MemoryStorage bool `json:"mem_storage,omitempty"`
	// Direct marks nats-server's internal mirror/source consumers: an
	// ephemeral push consumer, served like any other.
	Direct bool `json:"direct,omitempty"`
	// Sourcing marks nats-server's internal sourcing consumers (API level
	// 4); refused by CheckSupported.
	Sourcing bool `json:"sourcing,omitempty"`
	// Metadata is user metadata; keys starting with "_nats." belong to the
	// server.
	Metadata map[string]string `json:"metadata,omitempty"`
	// PauseUntil suspends delivery until this time.
	PauseUntil *time.Time `json:"pause_until,omitempty"`
	// PriorityGroups names the pull priority groups (at most one).
	PriorityGroups []string `json:"priority_groups,omitempty"`
	// PriorityPolicy chooses how priority groups are served.
	PriorityPolicy PriorityPolicy `json:"priority_policy,omitempty"`
	// PinnedTTL is how long a pinned client keeps its pin without pulling.
	PinnedTTL time.Duration `json:"priority_timeout,omitempty"`
}

// IsPush reports whether the config describes a push consumer.
func (c *ConsumerConfig) IsPush() bool { return c.DeliverSubject != "" }

// IsDurable reports whether the config describes a durable consumer.
func (c *ConsumerConfig) IsDurable() bool { return c.Durable != "" }

// Filters returns the consumer's subject filters: FilterSubjects, or
// FilterSubject as a one-element slice, or nil for "everything". The
// result aliases the config; do not modify it.
func (c *ConsumerConfig) Filters() []string {
	if len(c.FilterSubjects) > 0 {
		return c.FilterSubjects
	}
	if c.FilterSubject != "" {
		return []string{c.FilterSubject}
	}
	return nil
}

// SequenceInfo is a consumer sequence, the stream sequence it maps to and
// when it was last active.
type SequenceInfo struct {
	// Consumer is the consumer sequence.
	Consumer uint64 `json:"consumer_seq"`
	// Stream is the stream sequence.
	Stream uint64 `json:"stream_seq"`
	// Last is the time of the last activity, if any.
	Last *time.Time `json:"last_active,omitempty"`
}

// ConsumerInfo is a consumer's configuration and state.
type ConsumerInfo struct {
	// Stream is the stream's name.
	Stream string `json:"stream_name"`
	// Name is the consumer's name.
	Name string `json:"name"`
	// Created is when the consumer was created.
	Created time.Time `json:"created"`
	// Config is the normalized configuration.
	Config *ConsumerConfig `json:"config,omitempty"`
	// Delivered is the highest delivered pair.
	Delivered SequenceInfo `json:"delivered"`
	// AckFloor is the pair below which everything is acknowledged.
	AckFloor SequenceInfo `json:"ack_floor"`
	// NumAckPending counts delivered, unacknowledged messages.
	NumAckPending int `json:"num_ack_pending"`
	// NumRedelivered counts messages delivered more than once and still
	// pending.
	NumRedelivered int `json:"num_redelivered"`
	// NumWaiting counts waiting pull requests.
	NumWaiting int `json:"num_waiting"`
	// NumPending counts messages matching the filter not yet delivered.
	NumPending uint64 `json:"num_pending"`
	// Cluster describes the replica group.
	Cluster *ClusterInfo `json:"cluster,omitempty"`
	// PushBound reports live interest on a push consumer's deliver subject.
	PushBound bool `json:"push_bound,omitempty"`
	// Paused reports whether delivery is paused.
	Paused bool `json:"paused,omitempty"`
	// PauseRemaining is how long the pause lasts.
	PauseRemaining time.Duration `json:"pause_remaining,omitempty"`
	// TimeStamp is when the info was gathered.
	TimeStamp time.Time `json:"ts"`
	// PriorityGroups reports the state of each priority group.
	PriorityGroups []PriorityGroupState `json:"priority_groups,omitempty"`
}

// PriorityGroupState is the state of one priority group.
type PriorityGroupState struct {
	// Group is the group's name.
	Group string `json:"group"`
	// PinnedClientID is the pinned client's ID, if any.
	PinnedClientID string `json:"pinned_client_id,omitempty"`
	// PinnedTS is when the client was pinned. Like nats-server's it is a
	// time.Time with omitempty, so the zero time is still sent.
	PinnedTS time.Time `json:"pinned_ts,omitempty"`
}

// NextRequest is the JSON body of a CONSUMER.MSG.NEXT pull request. An
// empty body means batch 1; a bare integer body means that batch; see
// ParseNextRequest.
type NextRequest struct {
	// Expires is how long the request waits; 0 waits until filled.
	Expires time.Duration `json:"expires,omitempty"`
	// Batch is the number of messages wanted.
	Batch int `json:"batch,omitempty"`
	// MaxBytes bounds the bytes delivered for this request.
	MaxBytes int `json:"max_bytes,omitempty"`
	// NoWait answers at once (404 or 408) instead of waiting.
	NoWait bool `json:"no_wait,omitempty"`
	// Heartbeat is the idle heartbeat interval while the request waits.
	Heartbeat time.Duration `json:"idle_heartbeat,omitempty"`
	// PriorityGroup carries the priority-group fields.
	PriorityGroup
}

// PriorityGroup is the priority-group part of a pull request.
type PriorityGroup struct {
	// Group names the priority group.
	Group string `json:"group,omitempty"`
	// MinPending serves the request only while num_pending ≥ this.
	MinPending int64 `json:"min_pending,omitempty"`
	// MinAckPending serves the request only while num_ack_pending ≥ this.
	MinAckPending int64 `json:"min_ack_pending,omitempty"`
	// ID is the pin ID the client holds.
	ID string `json:"id,omitempty"`
	// Priority orders requests for the prioritized policy (0-9).
	Priority int `json:"priority,omitempty"`
}

// NakOptions is the optional JSON after "-NAK " in an ack body.
type NakOptions struct {
	// Delay postpones the redelivery.
	Delay time.Duration `json:"delay"`
}
