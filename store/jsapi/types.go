package jsapi

import (
	"fmt"
	"strings"
)

// This file holds the enums shared by the stream and consumer types. Each is
// a small integer whose zero value is nats-server's default and which
// travels as the same JSON string nats-server uses.

// RetentionPolicy decides when a stream's messages may be removed.
type RetentionPolicy uint8

const (
	// LimitsPolicy keeps messages until a limit removes them ("limits").
	LimitsPolicy RetentionPolicy = iota
	// InterestPolicy removes a message once every consumer has acked it
	// ("interest").
	InterestPolicy
	// WorkQueuePolicy removes a message once one consumer has acked it
	// ("workqueue").
	WorkQueuePolicy
)

var retentionNames = []string{"limits", "interest", "workqueue"}

// String returns the wire name ("limits", "interest", "workqueue").
func (p RetentionPolicy) String() string { return enumName(retentionNames, int(p)) }

// MarshalJSON encodes the policy as its wire name.
func (p RetentionPolicy) MarshalJSON() ([]byte, error) {
	return marshalEnum("retention", retentionNames, int(p))
}

// UnmarshalJSON decodes a wire name; anything else is an error.
func (p *RetentionPolicy) UnmarshalJSON(b []byte) error {
	i, err := unmarshalEnum("retention", retentionNames, b, false)
	*p = RetentionPolicy(i)
	return err
}

// DiscardPolicy says what a stream does when a limit is reached.
type DiscardPolicy uint8

const (
	// DiscardOld evicts the oldest messages ("old").
	DiscardOld DiscardPolicy = iota
	// DiscardNew rejects the new message ("new").
	DiscardNew
)

var discardNames = []string{"old", "new"}

// String returns the wire name ("old", "new").
func (p DiscardPolicy) String() string { return enumName(discardNames, int(p)) }

// MarshalJSON encodes the policy as its wire name.
func (p DiscardPolicy) MarshalJSON() ([]byte, error) {
	return marshalEnum("discard", discardNames, int(p))
}

// UnmarshalJSON decodes a wire name, ignoring case as nats-server does.
func (p *DiscardPolicy) UnmarshalJSON(b []byte) error {
	i, err := unmarshalEnum("discard", discardNames, b, true)
	*p = DiscardPolicy(i)
	return err
}

// StorageType selects the storage engine of a stream.
type StorageType uint8

const (
	// FileStorage keeps messages on disk ("file").
	FileStorage StorageType = iota
	// MemoryStorage keeps messages in memory ("memory").
	MemoryStorage
)

var storageNames = []string{"file", "memory"}

// String returns the wire name ("file", "memory").
func (t StorageType) String() string { return enumName(storageNames, int(t)) }

// MarshalJSON encodes the storage type as its wire name.
func (t StorageType) MarshalJSON() ([]byte, error) {
	return marshalEnum("storage", storageNames, int(t))
}

// UnmarshalJSON decodes a wire name; anything else is an error.
func (t *StorageType) UnmarshalJSON(b []byte) error {
	i, err := unmarshalEnum("storage", storageNames, b, false)
	*t = StorageType(i)
	return err
}

// Compression selects block compression of a file stream.
type Compression uint8

const (
	// NoCompression stores blocks as written ("none").
	NoCompression Compression = iota
	// S2Compression compresses blocks with S2 ("s2").
	S2Compression
)

var compressionNames = []string{"none", "s2"}

// String returns the wire name ("none", "s2").
func (c Compression) String() string { return enumName(compressionNames, int(c)) }

// MarshalJSON encodes the compression as its wire name.
func (c Compression) MarshalJSON() ([]byte, error) {
	return marshalEnum("compression", compressionNames, int(c))
}

// UnmarshalJSON decodes a wire name; anything else is an error.
func (c *Compression) UnmarshalJSON(b []byte) error {
	i, err := unmarshalEnum("compression", compressionNames, b, false)
	*c = Compression(i)
	return err
}

// PersistMode selects when a stream's writes are flushed relative to the
// publish acknowledgement (nats-server 2.12+).
type PersistMode uint8

const (
	// DefaultPersist flushes before acknowledging ("default").
	DefaultPersist PersistMode = iota
	// AsyncPersist may acknowledge before flushing ("async").
	AsyncPersist
)

var persistNames = []string{"default", "async"}

// String returns the wire name ("default", "async").
func (m PersistMode) String() string { return enumName(persistNames, int(m)) }

// MarshalJSON encodes the mode as its wire name.
func (m PersistMode) MarshalJSON() ([]byte, error) {
	return marshalEnum("persist_mode", persistNames, int(m))
}

// UnmarshalJSON decodes a wire name; "" means "default", as in nats-server.
func (m *PersistMode) UnmarshalJSON(b []byte) error {
	if string(b) == `""` {
		*m = DefaultPersist
		return nil
	}
	i, err := unmarshalEnum("persist_mode", persistNames, b, false)
	*m = PersistMode(i)
	return err
}

// DeliverPolicy says where a new consumer starts in its stream.
type DeliverPolicy uint8

const (
	// DeliverAll starts at the first message ("all").
	DeliverAll DeliverPolicy = iota
	// DeliverLast starts at the last message ("last").
	DeliverLast
	// DeliverNew starts after the last message ("new").
	DeliverNew
	// DeliverByStartSequence starts at OptStartSeq ("by_start_sequence").
	DeliverByStartSequence
	// DeliverByStartTime starts at the first message at or after
	// OptStartTime ("by_start_time").
	DeliverByStartTime
	// DeliverLastPerSubject starts with the last message of each subject
	// ("last_per_subject").
	DeliverLastPerSubject
)

var deliverNames = []string{"all", "last", "new", "by_start_sequence", "by_start_time", "last_per_subject"}

// String returns the wire name.
func (p DeliverPolicy) String() string { return enumName(deliverNames, int(p)) }

// MarshalJSON encodes the policy as its wire name. Like nats-server, an
// out-of-range value encodes as "undefined" rather than failing.
func (p DeliverPolicy) MarshalJSON() ([]byte, error) {
	if int(p) >= len(deliverNames) {
		return []byte(`"undefined"`), nil
	}
	return marshalEnum("deliver_policy", deliverNames, int(p))
}

// UnmarshalJSON decodes a wire name; "undefined" means "all", as in
// nats-server.
func (p *DeliverPolicy) UnmarshalJSON(b []byte) error {
	if string(b) == `"undefined"` {
		*p = DeliverAll
		return nil
	}
	i, err := unmarshalEnum("deliver_policy", deliverNames, b, false)
	*p = DeliverPolicy(i)
	return err
}

// AckPolicy says how a consumer's deliveries are acknowledged.
//
// The zero value is AckNone because that is nats-server's numeric zero; a
// config that omits ack_policy therefore decodes as "none", exactly as
// nats-server decodes it. nats.go always sends ack_policy.
type AckPolicy uint8

const (
	// AckNone needs no acknowledgement ("none").
	AckNone AckPolicy = iota
	// AckAll acknowledges a message and every one before it ("all").
	AckAll
	// AckExplicit needs each message acknowledged ("explicit").
	AckExplicit
	// AckFlowControl acknowledges through flow-control replies
	// ("flow_control", nats-server 2.14+; leafbox rejects it in Normalize).
	AckFlowControl
)

var ackNames = []string{"none", "all", "explicit", "flow_control"}

// String returns the wire name.
func (p AckPolicy) String() string { return enumName(ackNames, int(p)) }

// MarshalJSON encodes the policy as its wire name.
func (p AckPolicy) MarshalJSON() ([]byte, error) {
	return marshalEnum("ack_policy", ackNames, int(p))
}

// UnmarshalJSON decodes a wire name; anything else is an error.
func (p *AckPolicy) UnmarshalJSON(b []byte) error {
	i, err := unmarshalEnum("ack_policy", ackNames, b, false)
	*p = AckPolicy(i)
	return err
}

// ReplayPolicy says how fast stored messages are replayed.
type ReplayPolicy uint8

const (
	// ReplayInstant delivers as fast as possible ("instant").
	ReplayInstant ReplayPolicy = iota
	// ReplayOriginal keeps the original spacing ("original").
	ReplayOriginal
)

var replayNames = []string{"instant", "original"}

// String returns the wire name.
func (p ReplayPolicy) String() string { return enumName(replayNames, int(p)) }

// MarshalJSON encodes the policy as its wire name.
func (p ReplayPolicy) MarshalJSON() ([]byte, error) {
	return marshalEnum("replay_policy", replayNames, int(p))
}

// UnmarshalJSON decodes a wire name; anything else is an error.
func (p *ReplayPolicy) UnmarshalJSON(b []byte) error {
	i, err := unmarshalEnum("replay_policy", replayNames, b, false)
	*p = ReplayPolicy(i)
	return err
}

// PriorityPolicy selects how pull requests of priority groups are served.
type PriorityPolicy uint8

const (
	// PriorityNone disables priority groups ("none").
	PriorityNone PriorityPolicy = iota
	// PriorityOverflow serves requests meeting min_pending/min_ack_pending
	// ("overflow").
	PriorityOverflow
	// PriorityPinnedClient pins one client at a time ("pinned_client").
	PriorityPinnedClient
	// PriorityPrioritized serves lower priority numbers first
	// ("prioritized").
	PriorityPrioritized
)

var priorityNames = []string{"none", "overflow", "pinned_client", "prioritized"}

// String returns the wire name.
func (p PriorityPolicy) String() string { return enumName(priorityNames, int(p)) }

// MarshalJSON encodes the policy as its wire name.
func (p PriorityPolicy) MarshalJSON() ([]byte, error) {
	return marshalEnum("priority_policy", priorityNames, int(p))
}

// UnmarshalJSON decodes a wire name; anything else is an error.
func (p *PriorityPolicy) UnmarshalJSON(b []byte) error {
	i, err := unmarshalEnum("priority_policy", priorityNames, b, false)
	*p = PriorityPolicy(i)
	return err
}

// ConsumerAction is the action of a consumer create request.
type ConsumerAction uint8

const (
	// ActionCreateOrUpdate creates the consumer or updates it (`""`).
	ActionCreateOrUpdate ConsumerAction = iota
	// ActionUpdate updates an existing consumer only ("update").
	ActionUpdate
	// ActionCreate creates a consumer, or returns an identical existing one
	// ("create").
	ActionCreate
)

var actionNames = []string{"", "update", "create"}

// String returns the wire name ("", "update", "create").
func (a ConsumerAction) String() string { return enumName(actionNames, int(a)) }

// MarshalJSON encodes the action as its wire name.
func (a ConsumerAction) MarshalJSON() ([]byte, error) {
	return marshalEnum("action", actionNames, int(a))
}

// UnmarshalJSON decodes a wire name; anything else is an error.
func (a *ConsumerAction) UnmarshalJSON(b []byte) error {
	i, err := unmarshalEnum("action", actionNames, b, false)
	*a = ConsumerAction(i)
	return err
}

func enumName(names []string, i int) string {
	if i < 0 || i >= len(names) {
		return fmt.Sprintf("unknown(%d)", i)
	}
	return names[i]
}

func marshalEnum(field string, names []string, i int) ([]byte, error) {
	if i < 0 || i >= len(names) {
		return nil, fmt.Errorf("jsapi: can not marshal %s %d", field, i)
	}
	b := make([]byte, 0, len(names[i])+2)
	b = append(b, '"')
	b = append(b, names[i]...)
	return append(b, '"'), nil
}

// unmarshalEnum matches a JSON string literal against names. The wire
// names contain no characters JSON escapes, so a byte comparison of the
// quoted literal is exact. A JSON null leaves the value at index 0, the
// default, following the encoding/json convention that null means absent
// (nats-server rejects null here; no client sends it). The error text is
// nats-server's, because it reaches clients inside 10025 "invalid JSON: …".
func unmarshalEnum(_ string, names []string, b []byte, foldCase bool) (int, error) {
	if string(b) == "null" {
		return 0, nil
	}
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		s := string(b[1 : len(b)-1])
		for i, n := range names {
			if s == n || (foldCase && strings.EqualFold(s, n)) {
				return i, nil
			}
		}
	}
	return 0, fmt.Errorf("can not unmarshal %q", b)
}
