package jsapi

import "time"

// API subjects, as nats-server subscribes to them. Handlers receive the
// request subject with any "$JS.<domain>.API" prefix already mapped to
// APIPrefix. Token positions (0-based) are noted where handlers parse them.
const (
	// APIPrefix is the prefix of every request subject.
	APIPrefix = "$JS.API"
	// AllAPI matches every request subject.
	AllAPI = "$JS.API.>"

	// SubjectAccountInfo is $JS.API.INFO (empty body).
	SubjectAccountInfo = "$JS.API.INFO"

	// SubjectStreamCreate is STREAM.CREATE.<stream(4)>.
	SubjectStreamCreate = "$JS.API.STREAM.CREATE.*"
	// SubjectStreamUpdate is STREAM.UPDATE.<stream(4)>.
	SubjectStreamUpdate = "$JS.API.STREAM.UPDATE.*"
	// SubjectStreamNames is STREAM.NAMES.
	SubjectStreamNames = "$JS.API.STREAM.NAMES"
	// SubjectStreamList is STREAM.LIST.
	SubjectStreamList = "$JS.API.STREAM.LIST"
	// SubjectStreamInfo is STREAM.INFO.<stream(4)>.
	SubjectStreamInfo = "$JS.API.STREAM.INFO.*"
	// SubjectStreamDelete is STREAM.DELETE.<stream(4)>.
	SubjectStreamDelete = "$JS.API.STREAM.DELETE.*"
	// SubjectStreamPurge is STREAM.PURGE.<stream(4)>.
	SubjectStreamPurge = "$JS.API.STREAM.PURGE.*"
	// SubjectMsgDelete is STREAM.MSG.DELETE.<stream(5)>.
	SubjectMsgDelete = "$JS.API.STREAM.MSG.DELETE.*"
	// SubjectMsgGet is STREAM.MSG.GET.<stream(5)>.
	SubjectMsgGet = "$JS.API.STREAM.MSG.GET.*"
	// SubjectDirectGet is DIRECT.GET.<stream(4)> with a MsgGetRequest body.
	SubjectDirectGet = "$JS.API.DIRECT.GET.*"
	// SubjectDirectGetLastBySubject is DIRECT.GET.<stream(4)>.<subject(5…)>
	// with an empty body.
	SubjectDirectGetLastBySubject = "$JS.API.DIRECT.GET.*.>"

	// SubjectConsumerCreate is the legacy ephemeral CONSUMER.CREATE.<stream(4)>.
	SubjectConsumerCreate = "$JS.API.CONSUMER.CREATE.*"
	// SubjectConsumerCreateEx is CONSUMER.CREATE.<stream(4)>.<consumer(5)>
	// optionally followed by filter tokens (6…).
	SubjectConsumerCreateEx = "$JS.API.CONSUMER.CREATE.*.>"
	// SubjectDurableCreate is CONSUMER.DURABLE.CREATE.<stream(5)>.<durable(6)>.
	SubjectDurableCreate = "$JS.API.CONSUMER.DURABLE.CREATE.*.*"
	// SubjectConsumerNames is CONSUMER.NAMES.<stream(4)>.
	SubjectConsumerNames = "$JS.API.CONSUMER.NAMES.*"
	// SubjectConsumerList is CONSUMER.LIST.<stream(4)>.
	SubjectConsumerList = "$JS.API.CONSUMER.LIST.*"
	// SubjectConsumerInfo is CONSUMER.INFO.<stream(4)>.<consumer(5)>.
	SubjectConsumerInfo = "$JS.API.CONSUMER.INFO.*.*"
	// SubjectConsumerDelete is CONSUMER.DELETE.<stream(4)>.<consumer(5)>.
	SubjectConsumerDelete = "$JS.API.CONSUMER.DELETE.*.*"
	// SubjectConsumerPause is CONSUMER.PAUSE.<stream(4)>.<consumer(5)>.
	SubjectConsumerPause = "$JS.API.CONSUMER.PAUSE.*.*"
	// SubjectConsumerUnpin is CONSUMER.UNPIN.<stream(4)>.<consumer(5)>.
	SubjectConsumerUnpin = "$JS.API.CONSUMER.UNPIN.*.*"
	// SubjectConsumerReset is CONSUMER.RESET.<stream(4)>.<consumer(5)>.
	SubjectConsumerReset = "$JS.API.CONSUMER.RESET.*.*"
	// SubjectRequestNext is CONSUMER.MSG.NEXT.<stream(5)>.<consumer(6)>.
	SubjectRequestNext = "$JS.API.CONSUMER.MSG.NEXT.*.*"
)

// Paging limits, as nats-server's JSApiNamesLimit and JSApiListLimit.
const (
	// NamesLimit is the page size of STREAM.NAMES and CONSUMER.NAMES.
	NamesLimit = 1024
	// ListLimit is the page size of STREAM.LIST and CONSUMER.LIST.
	ListLimit = 256
	// MaxSubjectDetails bounds state.subjects in a STREAM.INFO response.
	MaxSubjectDetails = 100_000
)

// Response type strings, the "type" field of every JSON response.
const (
	// AccountInfoResponseType answers $JS.API.INFO.
	AccountInfoResponseType = "io.nats.jetstream.api.v1.account_info_response"
	// StreamCreateResponseType answers STREAM.CREATE.
	StreamCreateResponseType = "io.nats.jetstream.api.v1.stream_create_response"
	// StreamUpdateResponseType answers STREAM.UPDATE.
	StreamUpdateResponseType = "io.nats.jetstream.api.v1.stream_update_response"
	// StreamDeleteResponseType answers STREAM.DELETE.
	StreamDeleteResponseType = "io.nats.jetstream.api.v1.stream_delete_response"
	// StreamInfoResponseType answers STREAM.INFO.
	StreamInfoResponseType = "io.nats.jetstream.api.v1.stream_info_response"
	// StreamNamesResponseType answers STREAM.NAMES.
	StreamNamesResponseType = "io.nats.jetstream.api.v1.stream_names_response"
	// StreamListResponseType answers STREAM.LIST.
	StreamListResponseType = "io.nats.jetstream.api.v1.stream_list_response"
	// StreamPurgeResponseType answers STREAM.PURGE.
	StreamPurgeResponseType = "io.nats.jetstream.api.v1.stream_purge_response"
	// MsgGetResponseType answers STREAM.MSG.GET.
	MsgGetResponseType = "io.nats.jetstream.api.v1.stream_msg_get_response"
	// MsgDeleteResponseType answers STREAM.MSG.DELETE.
	MsgDeleteResponseType = "io.nats.jetstream.api.v1.stream_msg_delete_response"
	// ConsumerCreateResponseType answers every consumer create subject.
	ConsumerCreateResponseType = "io.nats.jetstream.api.v1.consumer_create_response"
	// ConsumerInfoResponseType answers CONSUMER.INFO.
	ConsumerInfoResponseType = "io.nats.jetstream.api.v1.consumer_info_response"
	// ConsumerDeleteResponseType answers CONSUMER.DELETE.
	ConsumerDeleteResponseType = "io.nats.jetstream.api.v1.consumer_delete_response"
	// ConsumerNamesResponseType answers CONSUMER.NAMES.
	ConsumerNamesResponseType = "io.nats.jetstream.api.v1.consumer_names_response"
	// ConsumerListResponseType answers CONSUMER.LIST.
	ConsumerListResponseType = "io.nats.jetstream.api.v1.consumer_list_response"
	// ConsumerPauseResponseType answers CONSUMER.PAUSE.
	ConsumerPauseResponseType = "io.nats.jetstream.api.v1.consumer_pause_response"
	// ConsumerUnpinResponseType answers CONSUMER.UNPIN.
	ConsumerUnpinResponseType = "io.nats.jetstream.api.v1.consumer_unpin_response"
	// ConsumerResetResponseType answers CONSUMER.RESET.
	ConsumerResetResponseType = "io.nats.jetstream.api.v1.consumer_reset_response"
	// SystemResponseType answers requests nats-server cannot route to a handler.
	SystemResponseType = "io.nats.jetstream.api.v1.system_response"
	// SystemOverloadedType answers requests dropped because the API queue is full.
	SystemOverloadedType = "io.nats.jetstream.api.v1.system_overloaded"
	// StreamSnapshotResponseType answers STREAM.SNAPSHOT.
	StreamSnapshotResponseType = "io.nats.jetstream.api.v1.stream_snapshot_response"
	// StreamRestoreResponseType answers STREAM.RESTORE.
	StreamRestoreResponseType = "io.nats.jetstream.api.v1.stream_restore_response"
	// StreamLeaderStepDownType answers STREAM.LEADER.STEPDOWN (clustered only).
	StreamLeaderStepDownType = "io.nats.jetstream.api.v1.stream_leader_stepdown_response"
	// ConsumerLeaderStepDownType answers CONSUMER.LEADER.STEPDOWN (clustered only).
	ConsumerLeaderStepDownType = "io.nats.jetstream.api.v1.consumer_leader_stepdown_response"
	// MetaLeaderStepDownType answers META.LEADER.STEPDOWN (clustered only).
	MetaLeaderStepDownType = "io.nats.jetstream.api.v1.meta_leader_stepdown_response"
	// AccountPurgeResponseType answers ACCOUNT.PURGE (system account only).
	AccountPurgeResponseType = "io.nats.jetstream.api.v1.account_purge_response"
)

// APIResponse is the common part of every JSON response: its type string
// and, on failure, the error.
type APIResponse struct {
	// Type is one of the *ResponseType constants.
	Type string `json:"type"`
	// Error is set when the request failed.
	Error *APIError `json:"error,omitempty"`
}

// ErrorResponse builds the response for a failed request of the given
// type. The result encodes as {"type":…,"error":{…}}.
func ErrorResponse(typ string, err *APIError) *APIResponse {
	return &APIResponse{Type: typ, Error: err}
}

// APIPaged is the paging part of list responses.
type APIPaged struct {
	// Total is the number of items across all pages.
	Total int `json:"total"`
	// Offset is this page's first item.
	Offset int `json:"offset"`
	// Limit is the page size.
	Limit int `json:"limit"`
}

// APIPagedRequest is the paging part of list requests.
type APIPagedRequest struct {
	// Offset is the first item wanted.
	Offset int `json:"offset"`
}

// AccountInfoResponse answers $JS.API.INFO.
type AccountInfoResponse struct {
	APIResponse
	*AccountInfo
}

// AccountInfo is an account's JetStream usage and limits.
type AccountInfo struct {
	Tier
	// Domain is the JetStream domain, when one is configured.
	Domain string `json:"domain,omitempty"`
	// API counts the account's API requests.
	API APIStats `json:"api"`
	// Tiers breaks usage down by tier ("R1", …), when tiers are used.
	Tiers map[string]Tier `json:"tiers,omitempty"`
}

// Tier is usage and limits for the account or one tier of it.
type Tier struct {
	// Memory is the bytes held by memory streams.
	Memory uint64 `json:"memory"`
	// Store is the bytes held by file streams.
	Store uint64 `json:"storage"`
	// ReservedMemory is memory reserved by max_bytes of memory streams.
	ReservedMemory uint64 `json:"reserved_memory"`
	// ReservedStore is storage reserved by max_bytes of file streams.
	ReservedStore uint64 `json:"reserved_storage"`
	// Streams is the number of streams.
	Streams int `json:"streams"`
	// Consumers is the number of consumers.
	Consumers int `json:"consumers"`
	// Limits are the account's limits.
	Limits AccountLimits `json:"limits"`
}

// AccountLimits are an account's JetStream limits; -1 is unlimited.
type AccountLimits struct {
	// MaxMemory bounds memory storage.
	MaxMemory int64 `json:"max_memory"`
	// MaxStore bounds file storage.
	MaxStore int64 `json:"max_storage"`
	// MaxStreams bounds the number of streams.
	MaxStreams int `json:"max_streams"`
	// MaxConsumers bounds the number of consumers.
	MaxConsumers int `json:"max_consumers"`
	// MaxAckPending bounds max_ack_pending of consumers.
	MaxAckPending int `json:"max_ack_pending"`
	// MemoryMaxStreamBytes bounds max_bytes of one memory stream.
	MemoryMaxStreamBytes int64 `json:"memory_max_stream_bytes"`
	// StoreMaxStreamBytes bounds max_bytes of one file stream.
	StoreMaxStreamBytes int64 `json:"storage_max_stream_bytes"`
	// MaxBytesRequired requires streams to set max_bytes.
	MaxBytesRequired bool `json:"max_bytes_required"`
}

// APIStats counts API requests. Level is the API level implemented.
type APIStats struct {
	// Level is the JetStream API level the server implements.
	Level int `json:"level"`
	// Total counts requests received.
	Total uint64 `json:"total"`
	// Errors counts requests answered with an error.
	Errors uint64 `json:"errors"`
	// Inflight counts requests being served.
	Inflight uint64 `json:"inflight,omitempty"`
}

// StreamCreateRequest is the body of STREAM.CREATE and STREAM.UPDATE: a
// StreamConfig with the request-scoped pedantic flag.
type StreamCreateRequest struct {
	StreamConfig
	// Pedantic refuses to apply defaults or silent adjustments.
	Pedantic bool `json:"pedantic,omitempty"`
}

// StreamCreateResponse answers STREAM.CREATE.
type StreamCreateResponse struct {
	APIResponse
	*StreamInfo
	// DidCreate reports that the stream was created by this request.
	DidCreate bool `json:"did_create,omitempty"`
}

// StreamUpdateResponse answers STREAM.UPDATE.
type StreamUpdateResponse struct {
	APIResponse
	*StreamInfo
}

// StreamInfoRequest is the optional body of STREAM.INFO.
type StreamInfoRequest struct {
	APIPagedRequest
	// DeletedDetails asks for state.deleted.
	DeletedDetails bool `json:"deleted_details,omitempty"`
	// SubjectsFilter asks for state.subjects for matching subjects.
	SubjectsFilter string `json:"subjects_filter,omitempty"`
}

// StreamInfoResponse answers STREAM.INFO; the paging applies to
// state.subjects.
type StreamInfoResponse struct {
	APIResponse
	APIPaged
	*StreamInfo
}

// StreamNamesRequest is the optional body of STREAM.NAMES.
type StreamNamesRequest struct {
	APIPagedRequest
	// Subject keeps only streams whose subjects overlap this filter.
	Subject string `json:"subject,omitempty"`
}

// StreamNamesResponse answers STREAM.NAMES. Streams is always present,
// as [] when empty.
type StreamNamesResponse struct {
	APIResponse
	APIPaged
	// Streams are the names on this page.
	Streams []string `json:"streams"`
}

// StreamListRequest is the optional body of STREAM.LIST.
type StreamListRequest struct {
	APIPagedRequest
	// Subject keeps only streams whose subjects overlap this filter.
	Subject string `json:"subject,omitempty"`
}

// StreamListResponse answers STREAM.LIST.
type StreamListResponse struct {
	APIResponse
	APIPaged
	// Streams are the infos on this page.
	Streams []*StreamInfo `json:"streams"`
	// Missing lists streams that could not be reached.
	Missing []string `json:"missing,omitempty"`
	// Offline maps offline streams to the reason.
	Offline map[string]string `json:"offline,omitempty"`
}

// StreamDeleteResponse answers STREAM.DELETE.
type StreamDeleteResponse struct {
	APIResponse
	// Success is true when the stream was deleted.
	Success bool `json:"success,omitempty"`
}

// StreamPurgeRequest is the optional body of STREAM.PURGE. Sequence and
// Keep are mutually exclusive.
type StreamPurgeRequest struct {
	// Sequence purges up to but not including this sequence.
	Sequence uint64 `json:"seq,omitempty"`
	// Subject purges only matching messages (wildcards allowed).
	Subject string `json:"filter,omitempty"`
	// Keep keeps this many of the newest matching messages.
	Keep uint64 `json:"keep,omitempty"`
}

// StreamPurgeResponse answers STREAM.PURGE.
type StreamPurgeResponse struct {
	APIResponse
	// Success is true when the purge ran.
	Success bool `json:"success,omitempty"`
	// Purged is how many messages were removed.
	Purged uint64 `json:"purged"`
}

// MsgGetRequest is the body of STREAM.MSG.GET and of DIRECT.GET.<stream>.
// Exactly one of Seq, LastFor, NextFor (with optional Seq) selects a
// message; the batch fields are for direct get only.
type MsgGetRequest struct {
	// Seq selects a sequence, or the start for NextFor.
	Seq uint64 `json:"seq,omitempty"`
	// LastFor selects the last message on this subject.
	LastFor string `json:"last_by_subj,omitempty"`
	// NextFor selects the first message at or after Seq on this subject
	// (wildcards allowed).
	NextFor string `json:"next_by_subj,omitempty"`
	// Batch asks for up to this many messages (direct get).
	Batch int `json:"batch,omitempty"`
	// MaxBytes bounds a batch's bytes (direct get).
	MaxBytes int `json:"max_bytes,omitempty"`
	// StartTime selects the first message at or after this time.
	StartTime *time.Time `json:"start_time,omitempty"`
	// MultiLastFor asks for the last message of each matching subject.
	MultiLastFor []string `json:"multi_last,omitempty"`
	// UpToSeq bounds a batch or multi-last by sequence.
	UpToSeq uint64 `json:"up_to_seq,omitempty"`
	// UpToTime bounds a batch or multi-last by time.
	UpToTime *time.Time `json:"up_to_time,omitempty"`
	// NoHeaders omits stored headers from direct get responses.
	NoHeaders bool `json:"no_hdr,omitempty"`
}

// MsgGetResponse answers STREAM.MSG.GET.
type MsgGetResponse struct {
	APIResponse
	// Message is the message found.
	Message *StoredMsg `json:"message,omitempty"`
}

// MsgDeleteRequest is the body of STREAM.MSG.DELETE.
type MsgDeleteRequest struct {
	// Seq is the sequence to delete.
	Seq uint64 `json:"seq"`
	// NoErase skips overwriting the message's bytes.
	NoErase bool `json:"no_erase,omitempty"`
}

// MsgDeleteResponse answers STREAM.MSG.DELETE.
type MsgDeleteResponse struct {
	APIResponse
	// Success is true when the message was deleted.
	Success bool `json:"success,omitempty"`
}

// ConsumerCreateRequest is the body of every consumer create subject.
type ConsumerCreateRequest struct {
	// Stream must equal the stream in the subject.
	Stream string `json:"stream_name"`
	// Config is the consumer's configuration.
	Config ConsumerConfig `json:"config"`
	// Action is create, update or create-or-update.
	Action ConsumerAction `json:"action"`
	// Pedantic refuses to apply defaults or silent adjustments.
	Pedantic bool `json:"pedantic,omitempty"`
}

// ConsumerCreateResponse answers consumer create requests.
type ConsumerCreateResponse struct {
	APIResponse
	*ConsumerInfo
}

// ConsumerInfoResponse answers CONSUMER.INFO.
type ConsumerInfoResponse struct {
	APIResponse
	*ConsumerInfo
}

// ConsumerDeleteResponse answers CONSUMER.DELETE.
type ConsumerDeleteResponse struct {
	APIResponse
	// Success is true when the consumer was deleted.
	Success bool `json:"success,omitempty"`
}

// ConsumersRequest is the optional body of CONSUMER.NAMES and
// CONSUMER.LIST.
type ConsumersRequest struct {
	APIPagedRequest
}

// ConsumerNamesResponse answers CONSUMER.NAMES. Consumers is always
// present, as [] when empty.
type ConsumerNamesResponse struct {
	APIResponse
	APIPaged
	// Consumers are the names on this page.
	Consumers []string `json:"consumers"`
}

// ConsumerListResponse answers CONSUMER.LIST.
type ConsumerListResponse struct {
	APIResponse
	APIPaged
	// Consumers are the infos on this page.
	Consumers []*ConsumerInfo `json:"consumers"`
	// Missing lists consumers that could not be reached.
	Missing []string `json:"missing,omitempty"`
	// Offline maps offline consumers to the reason.
	Offline map[string]string `json:"offline,omitempty"`
}

// ConsumerPauseRequest is the body of CONSUMER.PAUSE; a zero or past
// PauseUntil resumes. As in nats-server, omitempty does not omit a zero
// time.Time.
type ConsumerPauseRequest struct {
	// PauseUntil is when delivery resumes.
	PauseUntil time.Time `json:"pause_until,omitempty"`
}

// ConsumerPauseResponse answers CONSUMER.PAUSE.
type ConsumerPauseResponse struct {
	APIResponse
	// Paused reports whether the consumer is now paused.
	Paused bool `json:"paused"`
	// PauseUntil is when delivery resumes.
	PauseUntil time.Time `json:"pause_until"`
	// PauseRemaining is how long until then.
	PauseRemaining time.Duration `json:"pause_remaining,omitempty"`
}

// ConsumerUnpinRequest is the body of CONSUMER.UNPIN.
type ConsumerUnpinRequest struct {
	// Group is the priority group to unpin.
	Group string `json:"group"`
}

// ConsumerUnpinResponse answers CONSUMER.UNPIN.
type ConsumerUnpinResponse struct {
	APIResponse
}

// ConsumerResetRequest is the body of CONSUMER.RESET.
type ConsumerResetRequest struct {
	// Seq is the stream sequence to restart from.
	Seq uint64 `json:"seq,omitempty"`
}

// ConsumerResetResponse answers CONSUMER.RESET.
type ConsumerResetResponse struct {
	APIResponse
	*ConsumerInfo
	// ResetSeq is the sequence the consumer was reset to.
	ResetSeq uint64 `json:"reset_seq"`
}
