package jsapi

import "time"

// StreamConfig is a stream's configuration as sent in STREAM.CREATE and
// STREAM.UPDATE and echoed in StreamInfo. Field names and omitempty
// choices are nats-server's; fields without omitempty are always present
// in the echo, which nats.go relies on.
type StreamConfig struct {
	// Name is the stream's name (see ValidStreamName).
	Name string `json:"name"`
	// Description is free text.
	Description string `json:"description,omitempty"`
	// Subjects the stream captures; wildcards allowed. Normalize defaults
	// it to [Name] unless the stream is a mirror or has sources.
	Subjects []string `json:"subjects,omitempty"`
	// Retention decides when messages may go.
	Retention RetentionPolicy `json:"retention"`
	// MaxConsumers bounds the number of consumers; -1 is unlimited.
	MaxConsumers int `json:"max_consumers"`
	// MaxMsgs bounds the number of messages; -1 is unlimited.
	MaxMsgs int64 `json:"max_msgs"`
	// MaxBytes bounds the stored bytes; -1 is unlimited.
	MaxBytes int64 `json:"max_bytes"`
	// MaxAge bounds the age of messages; 0 is unlimited.
	MaxAge time.Duration `json:"max_age"`
	// MaxMsgsPerSubject bounds the messages per subject; -1 is unlimited.
	MaxMsgsPerSubject int64 `json:"max_msgs_per_subject"`
	// MaxMsgSize bounds one message; -1 is unlimited.
	MaxMsgSize int32 `json:"max_msg_size,omitempty"`
	// Discard chooses what happens at a limit.
	Discard DiscardPolicy `json:"discard"`
	// Storage selects file or memory storage.
	Storage StorageType `json:"storage"`
	// Replicas is the replication factor; leafbox supports only 1.
	Replicas int `json:"num_replicas"`
	// NoAck disables publish acknowledgements.
	NoAck bool `json:"no_ack,omitempty"`
	// DuplicateWindow is how long Nats-Msg-Id values are remembered.
	DuplicateWindow time.Duration `json:"duplicate_window,omitempty"`
	// Placement is accepted and ignored (single server).
	Placement *Placement `json:"placement,omitempty"`
	// Mirror makes the stream a read-only copy of another stream.
	Mirror *StreamSource `json:"mirror,omitempty"`
	// Sources are streams whose messages are copied into this one.
	Sources []*StreamSource `json:"sources,omitempty"`
	// Compression selects block compression.
	Compression Compression `json:"compression"`
	// FirstSeq is the sequence of the first message stored.
	FirstSeq uint64 `json:"first_seq,omitempty"`
	// SubjectTransform rewrites incoming subjects before storing.
	SubjectTransform *SubjectTransformConfig `json:"subject_transform,omitempty"`
	// RePublish republishes stored messages to another subject.
	RePublish *RePublish `json:"republish,omitempty"`
	// AllowDirect enables DIRECT.GET.
	AllowDirect bool `json:"allow_direct"`
	// MirrorDirect lets a mirror answer direct gets for its origin.
	MirrorDirect bool `json:"mirror_direct"`
	// DiscardNewPerSubject applies DiscardNew to MaxMsgsPerSubject too.
	DiscardNewPerSubject bool `json:"discard_new_per_subject,omitempty"`
	// Sealed forbids any change to the stream's messages; it can only be
	// set by an update and never cleared.
	Sealed bool `json:"sealed"`
	// DenyDelete forbids deleting messages through the API.
	DenyDelete bool `json:"deny_delete"`
	// DenyPurge forbids purges through the API (and rollups).
	DenyPurge bool `json:"deny_purge"`
	// AllowRollup enables the Nats-Rollup header.
	AllowRollup bool `json:"allow_rollup_hdrs"`
	// ConsumerLimits are defaults and ceilings for the stream's consumers.
	ConsumerLimits StreamConsumerLimits `json:"consumer_limits"`
	// AllowMsgTTL enables the Nats-TTL header.
	AllowMsgTTL bool `json:"allow_msg_ttl"`
	// SubjectDeleteMarkerTTL, when set, leaves a marker with this TTL when
	// max_age removes a subject's last message.
	SubjectDeleteMarkerTTL time.Duration `json:"subject_delete_marker_ttl,omitempty"`
	// AllowMsgCounter makes the stream a counter stream: publishes carry
	// HeaderIncr and the stream stores the subject's running total.
	AllowMsgCounter bool `json:"allow_msg_counter,omitempty"`
	// AllowAtomicPublish enables atomic batch publish (Nats-Batch-Id).
	AllowAtomicPublish bool `json:"allow_atomic,omitempty"`
	// AllowMsgSchedules enables message schedules: messages with
	// HeaderSchedule that the stream fires at HeaderScheduleTarget.
	AllowMsgSchedules bool `json:"allow_msg_schedules,omitempty"`
	// PersistMode selects flush-before-ack or async persistence (acks
	// that do not wait for the fsync); file storage only, fixed at create.
	PersistMode PersistMode `json:"persist_mode,omitempty"`
	// AllowBatchPublish enables fast batch publish (not supported).
	AllowBatchPublish bool `json:"allow_batched,omitempty"`
	// Metadata is user metadata; keys starting with "_nats." belong to the
	// server.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// StreamConsumerLimits are the consumer defaults and ceilings of a stream.
type StreamConsumerLimits struct {
	// InactiveThreshold is the default and maximum inactive_threshold.
	InactiveThreshold time.Duration `json:"inactive_threshold,omitempty"`
	// MaxAckPending is the default and maximum max_ack_pending.
	MaxAckPending int `json:"max_ack_pending,omitempty"`
}

// SubjectTransformConfig maps subjects matching Source to Destination.
type SubjectTransformConfig struct {
	// Source is the subject filter to transform.
	Source string `json:"src"`
	// Destination is the transform destination ({{wildcard(1)}} etc.).
	Destination string `json:"dest"`
}

// RePublish republishes stored messages.
type RePublish struct {
	// Source filters which stored subjects are republished.
	Source string `json:"src,omitempty"`
	// Destination is the republish subject transform.
	Destination string `json:"dest"`
	// HeadersOnly republishes headers and Nats-Msg-Size only.
	HeadersOnly bool `json:"headers_only,omitempty"`
}

// Placement requests a cluster and tags; leafbox ignores it.
type Placement struct {
	// Cluster names the requested cluster.
	Cluster string `json:"cluster,omitempty"`
	// Tags are required server tags.
	Tags []string `json:"tags,omitempty"`
	// Preferred names a preferred leader.
	Preferred string `json:"preferred,omitempty"`
}

// StreamSource names a stream that a mirror or sourcing stream copies.
//
// nats.go's client-side Domain field is not on the wire: clients translate
// it to External with API "$JS.<domain>.API".
type StreamSource struct {
	// Name is the origin stream's name.
	Name string `json:"name"`
	// OptStartSeq starts copying at this sequence.
	OptStartSeq uint64 `json:"opt_start_seq,omitempty"`
	// OptStartTime starts copying at this time.
	OptStartTime *time.Time `json:"opt_start_time,omitempty"`
	// FilterSubject copies only matching subjects.
	FilterSubject string `json:"filter_subject,omitempty"`
	// SubjectTransforms filter and rewrite the copied subjects.
	SubjectTransforms []SubjectTransformConfig `json:"subject_transforms,omitempty"`
	// External locates the origin in another account or domain.
	External *ExternalStream `json:"external,omitempty"`
	// Consumer names a durable consumer to source through.
	Consumer *StreamConsumerSource `json:"consumer,omitempty"`
}

// StreamConsumerSource names a durable consumer used for sourcing.
type StreamConsumerSource struct {
	// Name is the consumer's name.
	Name string `json:"name,omitempty"`
	// DeliverSubject is where the consumer delivers.
	DeliverSubject string `json:"deliver_subject,omitempty"`
}

// ExternalStream qualifies a source in another account or domain.
type ExternalStream struct {
	// APIPrefix is the API prefix, e.g. "$JS.hub.API".
	APIPrefix string `json:"api"`
	// DeliverPrefix is the delivery subject prefix.
	DeliverPrefix string `json:"deliver"`
}

// StreamInfo is a stream's configuration and state, the body of most
// stream responses.
type StreamInfo struct {
	// Config is the normalized configuration.
	Config StreamConfig `json:"config"`
	// Created is when the stream was created.
	Created time.Time `json:"created"`
	// State is the stream's current state.
	State StreamState `json:"state"`
	// Domain is the JetStream domain, when one is configured.
	Domain string `json:"domain,omitempty"`
	// Cluster describes the replica group; leafbox fills only Leader, if
	// anything.
	Cluster *ClusterInfo `json:"cluster,omitempty"`
	// Mirror reports the mirror's progress.
	Mirror *StreamSourceInfo `json:"mirror,omitempty"`
	// Sources report each source's progress.
	Sources []*StreamSourceInfo `json:"sources,omitempty"`
	// Alternates lists mirrors that can serve direct gets.
	Alternates []StreamAlternate `json:"alternates,omitempty"`
	// TimeStamp is when the info was gathered.
	TimeStamp time.Time `json:"ts"`
}

// StreamState is a stream's state. Subjects is filled only when the
// request asked for it with subjects_filter, Deleted only with
// deleted_details.
type StreamState struct {
	// Msgs is the number of stored messages.
	Msgs uint64 `json:"messages"`
	// Bytes is the accounting size of the stored messages.
	Bytes uint64 `json:"bytes"`
	// FirstSeq is the first stored sequence (LastSeq+1 when empty).
	FirstSeq uint64 `json:"first_seq"`
	// FirstTime is the first message's time (zero when empty).
	FirstTime time.Time `json:"first_ts"`
	// LastSeq is the last assigned sequence.
	LastSeq uint64 `json:"last_seq"`
	// LastTime is the last message's time.
	LastTime time.Time `json:"last_ts"`
	// NumSubjects is the number of distinct subjects stored.
	NumSubjects int `json:"num_subjects,omitempty"`
	// Subjects maps subjects matching the request's filter to counts.
	Subjects map[string]uint64 `json:"subjects,omitempty"`
	// NumDeleted counts interior deleted sequences.
	NumDeleted int `json:"num_deleted,omitempty"`
	// Deleted lists interior deleted sequences (deleted_details).
	Deleted []uint64 `json:"deleted,omitempty"`
	// Lost reports data lost to corruption.
	Lost *LostStreamData `json:"lost,omitempty"`
	// Consumers is the number of consumers.
	Consumers int `json:"consumer_count"`
}

// LostStreamData reports messages lost to corruption or truncation.
type LostStreamData struct {
	// Msgs are the lost sequences.
	Msgs []uint64 `json:"msgs"`
	// Bytes is how many bytes were lost.
	Bytes uint64 `json:"bytes"`
}

// StreamSourceInfo reports a mirror's or source's progress.
type StreamSourceInfo struct {
	// Name is the origin stream.
	Name string `json:"name"`
	// External locates the origin in another account or domain.
	External *ExternalStream `json:"external,omitempty"`
	// Lag is how many messages are not yet copied.
	Lag uint64 `json:"lag"`
	// Seq is the last origin sequence copied.
	Seq uint64 `json:"seq,omitempty"`
	// Active is the time since the last contact.
	Active time.Duration `json:"active"`
	// Error is the last error, if any.
	Error *APIError `json:"error,omitempty"`
	// FilterSubject is the source's filter.
	FilterSubject string `json:"filter_subject,omitempty"`
	// SubjectTransforms are the source's transforms.
	SubjectTransforms []SubjectTransformConfig `json:"subject_transforms,omitempty"`
}

// StreamAlternate is a mirror that can serve direct gets for a stream.
type StreamAlternate struct {
	// Name is the mirror's name.
	Name string `json:"name"`
	// Domain is the mirror's domain.
	Domain string `json:"domain,omitempty"`
	// Cluster is the mirror's cluster.
	Cluster string `json:"cluster"`
}

// ClusterInfo describes the servers behind a stream or consumer. A single
// leafbox server reports at most Name and Leader.
type ClusterInfo struct {
	// Name is the cluster's name.
	Name string `json:"name,omitempty"`
	// RaftGroup is the replica group's name.
	RaftGroup string `json:"raft_group,omitempty"`
	// Leader is the leader's server name.
	Leader string `json:"leader,omitempty"`
	// LeaderSince is when the leader was elected.
	LeaderSince *time.Time `json:"leader_since,omitempty"`
	// Replicas describes the followers.
	Replicas []*PeerInfo `json:"replicas,omitempty"`
}

// PeerInfo describes one follower.
type PeerInfo struct {
	// Name is the server's name.
	Name string `json:"name"`
	// Current reports whether it is caught up.
	Current bool `json:"current"`
	// Offline reports whether it is unreachable.
	Offline bool `json:"offline,omitempty"`
	// Active is the time since it was last seen.
	Active time.Duration `json:"active"`
	// Lag is how many operations it is behind.
	Lag uint64 `json:"lag,omitempty"`
	// Peer is its peer ID.
	Peer string `json:"peer"`
}

// StoredMsg is a message as returned by STREAM.MSG.GET; Header and Data
// travel base64-encoded (encoding/json's []byte encoding).
type StoredMsg struct {
	// Subject is the stored subject.
	Subject string `json:"subject"`
	// Sequence is the stream sequence.
	Sequence uint64 `json:"seq"`
	// Header is the raw header block ("NATS/1.0\r\n...").
	Header []byte `json:"hdrs,omitempty"`
	// Data is the payload.
	Data []byte `json:"data,omitempty"`
	// Time is when the message was stored.
	Time time.Time `json:"time"`
}
