package jsapi

import "time"

// JetStream advisories: JSON events the engine publishes under
// $JS.EVENT.ADVISORY when a stream or consumer changes, a message runs out
// of deliveries or is NAKed or terminated, and an API request is served.
// Subjects, type strings and field names are nats-server's
// (jetstream_events.go), so `nats event --js-advisory` and tooling built
// for nats-server read them.

// Advisory subjects. The per-stream ones end in .<stream>, the
// per-consumer ones in .<stream>.<consumer>.
const (
	// AdvisoryPrefix prefixes every JetStream advisory subject.
	AdvisoryPrefix = "$JS.EVENT.ADVISORY"
	// AdvisoryAPIAudit carries an APIAudit for each API response.
	AdvisoryAPIAudit = "$JS.EVENT.ADVISORY.API"
	// AdvisoryStreamCreated, AdvisoryStreamUpdated and
	// AdvisoryStreamDeleted carry a StreamActionAdvisory (.<stream>).
	AdvisoryStreamCreated = "$JS.EVENT.ADVISORY.STREAM.CREATED"
	AdvisoryStreamUpdated = "$JS.EVENT.ADVISORY.STREAM.UPDATED"
	AdvisoryStreamDeleted = "$JS.EVENT.ADVISORY.STREAM.DELETED"
	// AdvisoryConsumerCreated and AdvisoryConsumerDeleted carry a
	// ConsumerActionAdvisory (.<stream>.<consumer>).
	AdvisoryConsumerCreated = "$JS.EVENT.ADVISORY.CONSUMER.CREATED"
	AdvisoryConsumerDeleted = "$JS.EVENT.ADVISORY.CONSUMER.DELETED"
	// AdvisoryConsumerPause carries a ConsumerPauseAdvisory (.<stream>.<consumer>).
	AdvisoryConsumerPause = "$JS.EVENT.ADVISORY.CONSUMER.PAUSE"
	// AdvisoryMaxDeliveries carries a MaxDeliveriesAdvisory when a message
	// reached the consumer's max_deliver (.<stream>.<consumer>): the
	// subject a dead-letter stream captures.
	AdvisoryMaxDeliveries = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"
	// AdvisoryMsgNaked carries a NakAdvisory (.<stream>.<consumer>).
	AdvisoryMsgNaked = "$JS.EVENT.ADVISORY.CONSUMER.MSG_NAKED"
	// AdvisoryMsgTerminated carries a TerminatedAdvisory
	// (.<stream>.<consumer>).
	AdvisoryMsgTerminated = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED"
	// AdvisoryConsumerPinned carries a ConsumerGroupPinnedAdvisory when a
	// pinned_client group pins a new client (.<stream>.<consumer>).
	AdvisoryConsumerPinned = "$JS.EVENT.ADVISORY.CONSUMER.PINNED"
	// AdvisoryConsumerUnpinned carries a ConsumerGroupUnpinnedAdvisory
	// when a pin ends (.<stream>.<consumer>).
	AdvisoryConsumerUnpinned = "$JS.EVENT.ADVISORY.CONSUMER.UNPINNED"
	// AdvisoryStreamBatchAbandoned carries a StreamBatchAbandonedAdvisory
	// when an atomic batch is dropped before its commit (.<stream>).
	AdvisoryStreamBatchAbandoned = "$JS.EVENT.ADVISORY.STREAM.BATCH_ABANDONED"
)

// Advisory type strings, the "type" field of each advisory.
const (
	AdvisoryTypeAPIAudit       = "io.nats.jetstream.advisory.v1.api_audit"
	AdvisoryTypeStreamAction   = "io.nats.jetstream.advisory.v1.stream_action"
	AdvisoryTypeConsumerAction = "io.nats.jetstream.advisory.v1.consumer_action"
	AdvisoryTypeConsumerPause  = "io.nats.jetstream.advisory.v1.consumer_pause"
	AdvisoryTypeMaxDeliver     = "io.nats.jetstream.advisory.v1.max_deliver"
	AdvisoryTypeNak            = "io.nats.jetstream.advisory.v1.nak"
	AdvisoryTypeTerminated     = "io.nats.jetstream.advisory.v1.terminated"
	AdvisoryTypeGroupPinned    = "io.nats.jetstream.advisory.v1.consumer_group_pinned"
	AdvisoryTypeGroupUnpinned  = "io.nats.jetstream.advisory.v1.consumer_group_unpinned"
	// AdvisoryTypeBatchAbandoned is the type of a
	// StreamBatchAbandonedAdvisory.
	AdvisoryTypeBatchAbandoned = "io.nats.jetstream.advisory.v1.stream_batch_abandoned"
)

// StreamBatchAbandonedAdvisory reports an atomic batch the stream dropped
// without storing it.
type StreamBatchAbandonedAdvisory struct {
	TypedEvent
	Stream string `json:"stream"`
	Domain string `json:"domain,omitempty"`
	Batch  string `json:"batch"`
	// Reason is one of the BatchAbandoned constants.
	Reason string `json:"reason"`
}

// Reasons of a StreamBatchAbandonedAdvisory, nats-server's.
const (
	// BatchAbandonedTimeout: no message for the batch timeout.
	BatchAbandonedTimeout = "timeout"
	// BatchAbandonedLarge: more messages than a batch may hold.
	BatchAbandonedLarge = "large"
	// BatchAbandonedIncomplete: a gap in the batch sequence.
	BatchAbandonedIncomplete = "incomplete"
	// BatchAbandonedUnsupported: a Nats-Required-Api-Level above the
	// server's.
	BatchAbandonedUnsupported = "unsupported"
)

// Reasons of a ConsumerGroupUnpinnedAdvisory, nats-server's.
const (
	// UnpinReasonAdmin: the pin was removed through CONSUMER.UNPIN.
	UnpinReasonAdmin = "admin"
	// UnpinReasonTimeout: the pinned client sent no pull request for the
	// consumer's priority_timeout.
	UnpinReasonTimeout = "timeout"
)

// AdvisoryAction is what happened to a stream or consumer.
type AdvisoryAction string

// The actions of StreamActionAdvisory and ConsumerActionAdvisory.
const (
	ActionCreated  AdvisoryAction = "create"
	ActionDeleted  AdvisoryAction = "delete"
	ActionModified AdvisoryAction = "modify"
)

// TypedEvent is the head of every advisory: its type string, a unique id
// and when it was made (UTC).
type TypedEvent struct {
	Type string    `json:"type"`
	ID   string    `json:"id"`
	Time time.Time `json:"timestamp"`
}

// ClientInfo names the client an APIAudit is about, as far as the engine
// knows it: the account and the server it is connected to.
type ClientInfo struct {
	Account string `json:"acc,omitempty"`
	Server  string `json:"server,omitempty"`
}

// APIAudit reports one API request and the response sent to it.
type APIAudit struct {
	TypedEvent
	Server   string      `json:"server"`
	Client   *ClientInfo `json:"client"`
	Subject  string      `json:"subject"`
	Request  string      `json:"request,omitempty"`
	Response string      `json:"response"`
	Domain   string      `json:"domain,omitempty"`
}

// StreamActionAdvisory reports that a stream was created, updated or deleted.
type StreamActionAdvisory struct {
	TypedEvent
	Stream string         `json:"stream"`
	Action AdvisoryAction `json:"action"`
	Domain string         `json:"domain,omitempty"`
}

// ConsumerActionAdvisory reports that a consumer was created or deleted.
type ConsumerActionAdvisory struct {
	TypedEvent
	Stream   string         `json:"stream"`
	Consumer string         `json:"consumer"`
	Action   AdvisoryAction `json:"action"`
	Domain   string         `json:"domain,omitempty"`
}

// ConsumerPauseAdvisory reports that a consumer was paused or resumed through the
// API. PauseUntil is the zero time when it was resumed, as nats-server
// sends it.
type ConsumerPauseAdvisory struct {
	TypedEvent
	Stream     string    `json:"stream"`
	Consumer   string    `json:"consumer"`
	Paused     bool      `json:"paused"`
	PauseUntil time.Time `json:"pause_until,omitempty"`
	Domain     string    `json:"domain,omitempty"`
}

// MaxDeliveriesAdvisory reports that the message at StreamSeq was
// delivered Deliveries times, the consumer's max_deliver, and will not be
// delivered again: a dead-letter candidate, still in the stream.
type MaxDeliveriesAdvisory struct {
	TypedEvent
	Stream     string `json:"stream"`
	Consumer   string `json:"consumer"`
	StreamSeq  uint64 `json:"stream_seq"`
	Deliveries uint64 `json:"deliveries"`
	Domain     string `json:"domain,omitempty"`
}

// NakAdvisory reports a NAK of delivery ConsumerSeq (stream sequence
// StreamSeq, delivery number Deliveries).
type NakAdvisory struct {
	TypedEvent
	Stream      string `json:"stream"`
	Consumer    string `json:"consumer"`
	ConsumerSeq uint64 `json:"consumer_seq"`
	StreamSeq   uint64 `json:"stream_seq"`
	Deliveries  uint64 `json:"deliveries"`
	Domain      string `json:"domain,omitempty"`
}

// TerminatedAdvisory reports a +TERM of a delivery, with the reason the
// client gave after "+TERM ".
type TerminatedAdvisory struct {
	TypedEvent
	Stream      string `json:"stream"`
	Consumer    string `json:"consumer"`
	ConsumerSeq uint64 `json:"consumer_seq"`
	StreamSeq   uint64 `json:"stream_seq"`
	Deliveries  uint64 `json:"deliveries"`
	Reason      string `json:"reason,omitempty"`
	Domain      string `json:"domain,omitempty"`
}

// ConsumerGroupPinnedAdvisory reports that priority group Group of a
// pinned_client consumer pinned a new client, known by PinnedClientID
// (the Nats-Pin-Id its deliveries carry).
type ConsumerGroupPinnedAdvisory struct {
	TypedEvent
	Account        string `json:"account,omitempty"`
	Stream         string `json:"stream"`
	Consumer       string `json:"consumer"`
	Domain         string `json:"domain,omitempty"`
	Group          string `json:"group"`
	PinnedClientID string `json:"pinned_id"`
}

// ConsumerGroupUnpinnedAdvisory reports that the pin of priority group
// Group ended, for Reason (UnpinReasonAdmin or UnpinReasonTimeout).
type ConsumerGroupUnpinnedAdvisory struct {
	TypedEvent
	Account  string `json:"account,omitempty"`
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	Domain   string `json:"domain,omitempty"`
	Group    string `json:"group"`
	Reason   string `json:"reason"`
}
