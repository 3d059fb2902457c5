package jsapi

// PubAck is the reply to a publish that a stream stored (or deduplicated).
type PubAck struct {
	// Stream is the stream's name.
	Stream string `json:"stream"`
	// Sequence is the message's sequence (the original one on duplicates).
	Sequence uint64 `json:"seq"`
	// Domain is the JetStream domain, when one is configured.
	Domain string `json:"domain,omitempty"`
	// Duplicate reports a Nats-Msg-Id seen within the duplicate window.
	Duplicate bool `json:"duplicate,omitempty"`
	// Value is a counter stream's new total for the subject (see
	// HeaderIncr).
	Value string `json:"val,omitempty"`
	// Batch is the id of the atomic batch a commit stored.
	Batch string `json:"batch,omitempty"`
	// Count is how many messages that batch stored.
	Count uint64 `json:"count,omitempty"`
}

// PubAckResponse is the JSON reply to a publish: a PubAck on success, an
// error (with the stream name) on failure. Unlike API responses it has no
// "type" field.
type PubAckResponse struct {
	// Error is set when the message was not stored.
	Error *APIError `json:"error,omitempty"`
	*PubAck
}

// ErrorPubAck builds the reply to a publish the stream refused. As in
// nats-server the stream name travels beside the error.
func ErrorPubAck(stream string, err *APIError) *PubAckResponse {
	return &PubAckResponse{Error: err, PubAck: &PubAck{Stream: stream}}
}

// Headers a publisher sets and the engine checks (NATS-COMPAT §4.4).
const (
	// HeaderMsgID deduplicates within the duplicate window.
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderExpectedStream must equal the stream's name.
	HeaderExpectedStream = "Nats-Expected-Stream"
	// HeaderExpectedLastSeq must equal the stream's last sequence.
	HeaderExpectedLastSeq = "Nats-Expected-Last-Sequence"
	// HeaderExpectedLastSubjSeq must equal the last sequence on the
	// subject (0: no message on it).
	HeaderExpectedLastSubjSeq = "Nats-Expected-Last-Subject-Sequence"
	// HeaderExpectedLastSubjSeqSubj names the subject the previous header
	// checks, instead of the message's own.
	HeaderExpectedLastSubjSeqSubj = "Nats-Expected-Last-Subject-Sequence-Subject"
	// HeaderExpectedLastMsgID must equal the last stored Nats-Msg-Id.
	HeaderExpectedLastMsgID = "Nats-Expected-Last-Msg-Id"
	// HeaderRollup is "sub" or "all" (case-insensitive).
	HeaderRollup = "Nats-Rollup"
	// HeaderTTL is a per-message TTL: a Go duration, seconds, or "never".
	HeaderTTL = "Nats-TTL"
	// HeaderMarkerReason marks server-written markers (MaxAge, Purge,
	// Remove).
	HeaderMarkerReason = "Nats-Marker-Reason"
	// HeaderMsgSize carries the payload size of headers-only deliveries.
	HeaderMsgSize = "Nats-Msg-Size"
	// HeaderStreamSource marks messages copied from a source.
	HeaderStreamSource = "Nats-Stream-Source"
	// HeaderRequiredAPILevel is the API level a request requires.
	HeaderRequiredAPILevel = "Nats-Required-Api-Level"
	// HeaderBatchID names the atomic batch a message belongs to (at
	// most 64 bytes).
	HeaderBatchID = "Nats-Batch-Id"
	// HeaderBatchSeq is the message's position in its batch, from 1.
	HeaderBatchSeq = "Nats-Batch-Sequence"
	// HeaderBatchCommit ends a batch: "1" commits with this message,
	// "eob" commits without storing it.
	HeaderBatchCommit = "Nats-Batch-Commit"
)

// Values of HeaderRollup.
const (
	// RollupSubject purges earlier messages on the message's subject.
	RollupSubject = "sub"
	// RollupAll purges every earlier message in the stream.
	RollupAll = "all"
)

// Values of HeaderMarkerReason.
const (
	// MarkerMaxAge marks a subject's last message removed by max_age.
	MarkerMaxAge = "MaxAge"
	// MarkerPurge marks a purge.
	MarkerPurge = "Purge"
	// MarkerRemove marks a removal.
	MarkerRemove = "Remove"
)

// Headers of direct get responses and consumer status messages.
//
// A direct get (DIRECT.GET.<stream> with a MsgGetRequest body, or
// DIRECT.GET.<stream>.<subject> with an empty one) is answered with the
// stored message itself, not JSON: the stored payload as body, and the
// stored header block (or a fresh "NATS/1.0" one) extended with
// Nats-Stream, Nats-Subject, Nats-Sequence and Nats-Time-Stamp (RFC 3339
// with nanoseconds, UTC). Batch responses add Nats-Num-Pending and
// Nats-Last-Sequence to each message and end with a header-only
// "NATS/1.0 204 EOB" carrying both (and Nats-UpTo-Sequence for
// multi_last). Failures are header-only: "404 Message Not Found",
// "408 Empty Request", "408 Bad Request", "408 Malformed Request".
const (
	// HeaderStream is the stream of a direct get response.
	HeaderStream = "Nats-Stream"
	// HeaderSequence is the sequence of a direct get response.
	HeaderSequence = "Nats-Sequence"
	// HeaderTimeStamp is the RFC 3339 (nanoseconds, UTC) store time.
	HeaderTimeStamp = "Nats-Time-Stamp"
	// HeaderSubject is the stored subject of a direct get response.
	HeaderSubject = "Nats-Subject"
	// HeaderLastSequence is the previous sequence in a batch response.
	HeaderLastSequence = "Nats-Last-Sequence"
	// HeaderNumPending is how many messages a batch still has.
	HeaderNumPending = "Nats-Num-Pending"
	// HeaderUpToSequence is the batch's upper bound.
	HeaderUpToSequence = "Nats-UpTo-Sequence"
	// HeaderLastConsumer is the last consumer sequence, in heartbeats.
	HeaderLastConsumer = "Nats-Last-Consumer"
	// HeaderLastStream is the last stream sequence, in heartbeats.
	HeaderLastStream = "Nats-Last-Stream"
	// HeaderConsumerStalled is the flow-control reply a stalled push
	// consumer waits for, in heartbeats.
	HeaderConsumerStalled = "Nats-Consumer-Stalled"
	// HeaderPendingMessages is the unfilled batch of an ended pull request.
	HeaderPendingMessages = "Nats-Pending-Messages"
	// HeaderPendingBytes is the unused max_bytes of an ended pull request.
	HeaderPendingBytes = "Nats-Pending-Bytes"
	// HeaderPinID is the pin ID of pinned priority groups.
	HeaderPinID = "Nats-Pin-Id"
)

// Status texts of header-only status messages ("NATS/1.0 <code> <text>").
const (
	// StatusNoMessages (404) ends a no_wait pull request with nothing
	// pending.
	StatusNoMessages = "No Messages"
	// StatusRequestTimeout (408) ends an expired pull request.
	StatusRequestTimeout = "Request Timeout"
	// StatusRequestsPending (408) refuses a no_wait request already covered.
	StatusRequestsPending = "Requests Pending"
	// StatusExceededMaxWaiting (409) refuses a request over max_waiting.
	StatusExceededMaxWaiting = "Exceeded MaxWaiting"
	// StatusBatchCompleted (409) ends a request whose batch filled before
	// its max_bytes.
	StatusBatchCompleted = "Batch Completed"
	// StatusMessageSizeExceedsMaxBytes (409) ends a request whose next
	// message would not fit.
	StatusMessageSizeExceedsMaxBytes = "Message Size Exceeds MaxBytes"
	// StatusConsumerDeleted (409) ends requests of a deleted consumer.
	StatusConsumerDeleted = "Consumer Deleted"
	// StatusConsumerIsPush (409) refuses MSG.NEXT to a push consumer.
	StatusConsumerIsPush = "Consumer is push based"
	// StatusIdleHeartbeat (100) is an idle heartbeat.
	StatusIdleHeartbeat = "Idle Heartbeat"
	// StatusFlowControl (100) is a flow-control request.
	StatusFlowControl = "FlowControl Request"
	// StatusMessageNotFound (404) answers a direct get that found nothing.
	StatusMessageNotFound = "Message Not Found"
	// StatusEmptyRequest (408) answers a direct get with an empty body.
	StatusEmptyRequest = "Empty Request"
	// StatusBadRequest (408 for direct get, 400 for pull) answers a bad body.
	StatusBadRequest = "Bad Request"
	// StatusMalformedRequest (408) answers an undecodable direct get.
	StatusMalformedRequest = "Malformed Request"
	// StatusEOB (204) ends a batch direct get.
	StatusEOB = "EOB"
	// StatusWrongPinID ends a waiting pull request whose pin ID is no
	// longer the pinned one (423).
	StatusWrongPinID = "Nats-Wrong-Pin-Id"
	// StatusPinIDMismatch refuses a pull request carrying another pin ID
	// than the pinned one (423).
	StatusPinIDMismatch = "Nats-Pin-Id mismatch"
)
