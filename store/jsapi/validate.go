package jsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
)

// Limits and defaults nats-server applies to configurations.
const (
	// MaxNameLen bounds every name (ValidName), as nats-server bounds
	// stream and consumer names.
	MaxNameLen = 255
	// MaxDescriptionLen bounds descriptions.
	MaxDescriptionLen = 4 * 1024
	// MaxMetadataLen bounds the summed key and value lengths of metadata.
	MaxMetadataLen = 128 * 1024
	// MaxReplicas is the largest num_replicas nats-server accepts at all;
	// a single leafbox server accepts only 1.
	MaxReplicas = 5
	// APILevel is the JetStream API level nats-server v2.15 reports.
	APILevel = 5

	// DefaultDuplicateWindow is the default duplicate_window.
	DefaultDuplicateWindow = 2 * time.Minute
	// DefaultAckWait is the default ack_wait of acknowledging consumers.
	DefaultAckWait = 30 * time.Second
	// DefaultMaxAckPending is the default max_ack_pending of acknowledging
	// consumers.
	DefaultMaxAckPending = 1000
	// DefaultMaxWaiting is the default max_waiting of pull consumers.
	DefaultMaxWaiting = 512
	// DefaultInactiveThreshold is the inactive_threshold stamped on
	// ephemeral consumers that set none.
	DefaultInactiveThreshold = 5 * time.Second
	// DefaultPinnedTTL is the default priority_timeout of pinned_client
	// consumers.
	DefaultPinnedTTL = 2 * time.Minute
	// FlowControlAckHeartbeat is the idle_heartbeat that the flow_control
	// ack policy requires (nats-server's source health heartbeat).
	FlowControlAckHeartbeat = time.Second

	// minDuration is the smallest max_age, duplicate_window and consumer
	// idle_heartbeat nats-server accepts.
	minDuration = 100 * time.Millisecond
)

// Options carries what Normalize needs besides the configuration itself:
// the request's pedantic flag and the server and account limits. The zero
// value means "not pedantic, no limits".
type Options struct {
	// Pedantic refuses every silent default or adjustment that would
	// change a value the client set, as the request's "pedantic" flag asks.
	Pedantic bool
	// MaxDuplicateWindow caps duplicate_window (server limit).
	MaxDuplicateWindow time.Duration
	// MaxAckPending caps max_ack_pending (smallest of server and account
	// limits).
	MaxAckPending int
	// MaxRequestBatch caps and defaults max_batch of pull consumers.
	MaxRequestBatch int
	// MaxBytesRequired rejects streams without max_bytes.
	MaxBytesRequired bool
	// MemoryMaxStreamBytes caps max_bytes of memory streams.
	MemoryMaxStreamBytes int64
	// StoreMaxStreamBytes caps max_bytes of file streams.
	StoreMaxStreamBytes int64
}

// ValidName reports whether name is a valid name for anything leafbox
// turns into a subject token or a file name: a stream, consumer, durable,
// uplink, downlink or JetStream domain. CheckName says why not.
func ValidName(name string) bool { return CheckName(name) == nil }

// CheckName returns why name cannot be a stream, consumer, durable,
// uplink, downlink or JetStream domain name, or nil. A name is 1 to
// MaxNameLen bytes (nats-server's bound for file-backed names) without
// whitespace, '.', '*', '>', '/', '\\' or control characters (NUL
// among them): nats-server's isValidName and its path separator rule,
// plus what makes a safe file name, so "." and "..", a leading '.', and a
// name that splits into two path elements are all refused. The error
// quotes nothing but the offending character and has no package prefix,
// for callers to prefix with the name's place.
func CheckName(name string) error {
	if len(name) > MaxNameLen {
		return fmt.Errorf("is %d bytes long, more than %d", len(name), MaxNameLen)
	}
	return checkChars(name)
}

// checkChars is CheckName without the bounds on the length: the
// JetStream API reports a name that is too long with its own error, after
// the other checks, as nats-server does.
func checkChars(name string) error {
	if name == "" {
		return errors.New("must not be empty")
	}
	for _, r := range name {
		switch {
		case r == ' ' || r == '\t' || r == '\r' || r == '\n' || r == '\f':
			return errors.New("must not contain whitespace")
		case r == '.' || r == '*' || r == '>' || r == '/' || r == '\\':
			return fmt.Errorf("must not contain %q", r)
		case unicode.IsControl(r):
			return fmt.Errorf("must not contain the control character %U", r)
		}
	}
	return nil
}

// serverMetadataPrefix marks metadata keys owned by the server.
const serverMetadataPrefix = "_nats."

func metadataLen(md map[string]string) int {
	n := 0
	for k, v := range md {
		n += len(k) + len(v)
	}
	return n
}

// withoutServerMetadata returns md without "_nats." keys, or nil if
// nothing remains.
func withoutServerMetadata(md map[string]string) map[string]string {
	var out map[string]string
	for k, v := range md {
		if strings.HasPrefix(k, serverMetadataPrefix) {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(md))
		}
		out[k] = v
	}
	return out
}

// Clone returns a deep copy of c.
func (c *StreamConfig) Clone() *StreamConfig {
	out := *c
	out.Subjects = slices.Clone(c.Subjects)
	if c.Placement != nil {
		p := *c.Placement
		p.Tags = slices.Clone(p.Tags)
		out.Placement = &p
	}
	out.Mirror = c.Mirror.clone()
	if c.Sources != nil {
		out.Sources = make([]*StreamSource, len(c.Sources))
		for i, s := range c.Sources {
			out.Sources[i] = s.clone()
		}
	}
	if c.SubjectTransform != nil {
		t := *c.SubjectTransform
		out.SubjectTransform = &t
	}
	if c.RePublish != nil {
		r := *c.RePublish
		out.RePublish = &r
	}
	out.Metadata = maps.Clone(c.Metadata)
	return &out
}

func (s *StreamSource) clone() *StreamSource {
	if s == nil {
		return nil
	}
	out := *s
	if s.OptStartTime != nil {
		t := *s.OptStartTime
		out.OptStartTime = &t
	}
	out.SubjectTransforms = slices.Clone(s.SubjectTransforms)
	if s.External != nil {
		e := *s.External
		out.External = &e
	}
	if s.Consumer != nil {
		c := *s.Consumer
		out.Consumer = &c
	}
	return &out
}

// Clone returns a deep copy of c.
func (c *ConsumerConfig) Clone() *ConsumerConfig {
	out := *c
	if c.OptStartTime != nil {
		t := *c.OptStartTime
		out.OptStartTime = &t
	}
	out.BackOff = slices.Clone(c.BackOff)
	out.FilterSubjects = slices.Clone(c.FilterSubjects)
	out.Metadata = maps.Clone(c.Metadata)
	if c.PauseUntil != nil {
		t := *c.PauseUntil
		out.PauseUntil = &t
	}
	out.PriorityGroups = slices.Clone(c.PriorityGroups)
	return &out
}

// StoreConfig converts the stream's limits to the storage engine's
// configuration. nats-server's -1 ("unlimited") becomes store's 0.
func (c *StreamConfig) StoreConfig() store.Config {
	unlimited := func(v int64) int64 {
		if v < 0 {
			return 0
		}
		return v
	}
	cfg := store.Config{
		Name:                 c.Name,
		MaxMsgs:              unlimited(c.MaxMsgs),
		MaxBytes:             unlimited(c.MaxBytes),
		MaxAge:               max(c.MaxAge, 0),
		MaxMsgsPerSubject:    unlimited(c.MaxMsgsPerSubject),
		MaxMsgSize:           int32(unlimited(int64(c.MaxMsgSize))),
		DiscardNewPerSubject: c.DiscardNewPerSubject,
		AllowMsgTTL:          c.AllowMsgTTL,
	}
	if c.Discard == DiscardNew {
		cfg.Discard = store.DiscardNew
	}
	return cfg
}

// StoreError maps an error from a store.Stream to the API error
// nats-server sends for the same failure, with nats-server's texts:
// limit rejections under DiscardNew are 503/10077 ("maximum messages
// exceeded", ...), an oversized message 400/10054, an exhausted store
// 503/10023, a missing or deleted message 404/10037. Other errors become
// 503/10077 with the error's text. An *APIError is returned unchanged.
func StoreError(err error) *APIError {
	if ae, ok := asAPIError(err); ok {
		return ae
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, store.ErrMaxMsgs):
		return NewStreamStoreFailedError(errors.New("maximum messages exceeded"))
	case errors.Is(err, store.ErrMaxBytes):
		return NewStreamStoreFailedError(errors.New("maximum bytes exceeded"))
	case errors.Is(err, store.ErrMaxMsgsPerSubject):
		return NewStreamStoreFailedError(errors.New("maximum messages per subject exceeded"))
	case errors.Is(err, store.ErrMaxMsgSize):
		return NewMessageExceedsMaximumError()
	case errors.Is(err, store.ErrStoreFull):
		return NewInsufficientResourcesError()
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrDeleted):
		return NewNoMessageFoundError()
	case errors.Is(err, store.ErrClosed):
		return NewStreamStoreFailedError(errors.New("store is closed"))
	}
	return NewStreamStoreFailedError(err)
}

// invalidSubject is the "invalid subject <s>" error nats-server wraps in
// transform errors.
func invalidSubject(s string) error { return errors.New("invalid subject " + s) }

// subjectOK reports whether s is a valid subject (wildcards allowed).
func subjectOK(s string) bool { return subject.Valid(s) }

// jsonEqual reports whether a and b have the same JSON encoding, which is
// what a client sees; it ignores time zones and nil-versus-empty
// differences that omitempty hides. Map keys encode sorted.
func jsonEqual(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
