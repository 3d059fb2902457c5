// Package store defines leafbox's message storage: the Stream interface
// that the memory and file engines implement, the message and state types,
// and the errors callers branch on.
//
// A Stream is an append-only, sequence-numbered log of messages with
// retention limits. It knows nothing of JetStream's API, consumers'
// delivery or subject routing beyond filtering: store/jetstream builds those
// on top. Sequences start at 1 and never repeat, even after deletes and
// purges.
//
// # Ownership
//
// Store copies what it is given. Load, LoadNext and LoadLast fill the *Msg
// the caller passes (or a new one when nil); its slices are owned by the
// caller afterwards and stay valid, unless the caller lent Msg.Buf for
// them, which the next load into that Msg reuses.
//
// # Time
//
// An engine's clock is the time package: message timestamps and ages come
// from time.Now, and MaxAge, TTL and sync timers are time.AfterFunc
// timers and tickers armed by the goroutine that opens or stores, with
// the engine's goroutines started by Open. A stream opened inside a
// testing/synctest bubble therefore runs on the bubble's clock, timers
// and goroutines included: the conformance suite checks MaxAge and TTLs
// there to the instant, without waiting (store/storetest).
package store

import (
	"errors"
	"time"
)

// Errors callers branch on with errors.Is.
var (
	// ErrNotFound means no message has that sequence or matches.
	ErrNotFound = errors.New("store: message not found")
	// ErrDeleted means the sequence existed but was deleted.
	ErrDeleted = errors.New("store: message deleted")
	// ErrMaxMsgs is returned by Store under DiscardNew when MaxMsgs is reached.
	ErrMaxMsgs = errors.New("store: maximum messages exceeded")
	// ErrMaxBytes is returned by Store under DiscardNew when MaxBytes is reached.
	ErrMaxBytes = errors.New("store: maximum bytes exceeded")
	// ErrMaxMsgsPerSubject is returned by Store under DiscardNew with
	// DiscardNewPerSubject when a subject holds MaxMsgsPerSubject messages.
	ErrMaxMsgsPerSubject = errors.New("store: maximum messages per subject exceeded")
	// ErrMaxMsgSize is returned by Store for a message over MaxMsgSize.
	ErrMaxMsgSize = errors.New("store: message size exceeds maximum allowed")
	// ErrStoreFull means the engine's own capacity (disk, memory budget) is
	// exhausted; the message was not stored.
	ErrStoreFull = errors.New("store: storage capacity exhausted")
	// ErrClosed means the stream was closed.
	ErrClosed = errors.New("store: closed")
	// ErrCorrupt marks data that failed its checksum or structure checks.
	ErrCorrupt = errors.New("store: corrupt data")
	// ErrInvalidConfig means a Config field has an impossible value.
	ErrInvalidConfig = errors.New("store: invalid config")
)

// DiscardPolicy says what happens when a limit is reached.
type DiscardPolicy uint8

const (
	// DiscardOld removes the oldest messages to make room.
	DiscardOld DiscardPolicy = iota
	// DiscardNew rejects the new message.
	DiscardNew
)

// Config holds a stream's storage limits. Zero means unlimited for every
// limit.
type Config struct {
	// Name identifies the stream; engines use it for files and logs.
	Name string
	// MaxMsgs, MaxBytes and MaxAge bound the stream as a whole.
	MaxMsgs  int64
	MaxBytes int64
	MaxAge   time.Duration
	// MaxMsgsPerSubject bounds the messages kept per subject (KV history).
	MaxMsgsPerSubject int64
	// MaxMsgSize bounds one message (header plus data).
	MaxMsgSize int32
	// Discard chooses between evicting old messages and rejecting new ones.
	Discard DiscardPolicy
	// DiscardNewPerSubject applies DiscardNew to MaxMsgsPerSubject too.
	DiscardNewPerSubject bool
	// AllowMsgTTL enables per-message TTLs passed to Store.
	AllowMsgTTL bool
}

// Msg is one stored message.
type Msg struct {
	Subject string
	Header  []byte
	Data    []byte
	Seq     uint64
	// Time is when it was stored, in Unix nanoseconds.
	Time int64
	// Buf, when not nil, is scratch space a caller lends for the loaded
	// Header and Data: an engine that copies message bytes puts them in
	// Buf's capacity (replacing Buf with a larger buffer it keeps there
	// when they do not fit), so a caller that loads into the same Msg again
	// allocates nothing and gives up the previous message's Header and
	// Data. With Buf nil every load gets bytes of its own.
	Buf []byte
}

// Size is the accounting size of a message, as nats-server counts it:
// subject, header and data lengths plus 16 bytes of overhead.
func Size(subject string, hdr, data []byte) uint64 {
	return uint64(len(subject) + len(hdr) + len(data) + 16)
}

// State summarises a stream.
type State struct {
	Msgs        uint64
	Bytes       uint64
	FirstSeq    uint64
	FirstTime   time.Time
	LastSeq     uint64
	LastTime    time.Time
	NumSubjects int
	// NumDeleted counts interior gaps between FirstSeq and LastSeq.
	NumDeleted int
}

// FilteredState summarises the messages matching a filter from a sequence.
type FilteredState struct {
	Msgs  uint64
	First uint64
	Last  uint64
}

// PurgeOptions select what Purge removes. The zero value removes every
// message.
type PurgeOptions struct {
	// Subject limits the purge to messages matching this filter.
	Subject string
	// Sequence removes messages below this sequence (exclusive).
	Sequence uint64
	// Keep retains this many of the newest matching messages.
	Keep uint64
}

// Syncer is the optional ability of a Stream to make what it stored
// durable on demand (a file stream). Callers find it with a type
// assertion, `if s, ok := st.(store.Syncer); ok && s.SyncDeferred()`, and
// then own the fsync: they run Sync before they tell anyone a message is
// safe. A stream without the ability syncs nothing (memory).
type Syncer interface {
	// Sync returns once every message stored before the call is durable.
	Sync() error
	// SyncDeferred reports whether Store returns before the message is
	// durable, so that only a Sync (or the stream's own timer) makes it
	// so. A stream that syncs in Store reports false: its Sync has
	// nothing left to do.
	SyncDeferred() bool
}

// HeaderLoader is the optional ability of a Stream to find the messages
// that carry a header without reading those that do not (a file stream
// keeps that in its index). Callers find it with a type assertion; the
// fallback is LoadNext and a look at each message's Header.
type HeaderLoader interface {
	// LoadNextWithHeader returns the first message with sequence ≥ start
	// whose Header is not empty, or ErrNotFound. sm is as for LoadNext.
	LoadNextWithHeader(start uint64, sm *Msg) (*Msg, error)
}

// TimeSeeker is the optional ability of a Stream to find where a time
// falls without loading messages (a file stream keeps each block's last
// time). Callers find it with a type assertion; the fallback is a binary
// search over LoadNext.
type TimeSeeker interface {
	// SeqFromTime returns the sequence of the first live message stored
	// at or after ts (Unix ns), or LastSeq+1 when every message is older.
	SeqFromTime(ts int64) uint64
}

// BatchMsg is one message of a batch handed to BatchStorer.StoreBatch.
type BatchMsg struct {
	Subject string
	Header  []byte
	Data    []byte
	// TTL is as Stream.Store's ttl.
	TTL int64
}

// BatchStorer is the optional ability of a Stream to store several
// messages as one unit: readers see none of them or all of them, and a
// file stream writes them with a single write, so that a crash leaves
// either the whole batch or a prefix of its records (which the caller's
// recovery can recognise) but never interleaves it with other writes.
// Callers find it with a type assertion.
type BatchStorer interface {
	// StoreBatch appends msgs with consecutive sequences and returns
	// the first sequence and the common timestamp. Limits are applied
	// as Store applies them, message by message. An error stores none
	// of the messages.
	StoreBatch(msgs []BatchMsg) (first uint64, ts int64, err error)
}

// Stream is one stream's message log. Implementations are safe for
// concurrent use.
type Stream interface {
	// Store appends a message and returns its sequence and timestamp
	// (Unix ns). ttl, when > 0 and AllowMsgTTL is set, expires the
	// message after that many nanoseconds. Limits are applied: the
	// oldest messages are evicted, or under DiscardNew the message is
	// rejected with ErrMaxMsgs, ErrMaxBytes or ErrMaxMsgsPerSubject.
	Store(subject string, hdr, data []byte, ttl int64) (seq uint64, ts int64, err error)
	// Load returns the message with sequence seq: ErrNotFound beyond the
	// stream's bounds, ErrDeleted for a removed one.
	Load(seq uint64, sm *Msg) (*Msg, error)
	// LoadNext returns the first message with sequence ≥ start whose
	// subject matches filter ("" or ">" match all; wildcards allowed), or
	// ErrNotFound.
	LoadNext(filter string, start uint64, sm *Msg) (*Msg, error)
	// LoadLast returns the newest message whose subject matches filter.
	LoadLast(filter string, sm *Msg) (*Msg, error)
	// Remove deletes one message; erase overwrites its bytes on disk too.
	// It reports whether the message existed.
	Remove(seq uint64, erase bool) (bool, error)
	// Purge removes the messages opts selects and returns how many.
	Purge(opts PurgeOptions) (uint64, error)
	// State returns the stream's summary.
	State() State
	// FilteredState summarises messages matching filter with seq ≥ from.
	FilteredState(filter string, from uint64) FilteredState
	// SubjectsState returns the message count per subject matching filter.
	SubjectsState(filter string) map[string]uint64
	// UpdateConfig applies new limits, evicting what no longer fits.
	UpdateConfig(cfg Config) error
	// Close flushes and releases the stream.
	Close() error
	// Delete closes the stream and removes all its data.
	Delete() error
}

// SequencePair is a consumer sequence with the stream sequence it maps to.
type SequencePair struct {
	Consumer uint64
	Stream   uint64
}

// Pending is one delivered, unacknowledged message of a consumer.
type Pending struct {
	// Sequence is the consumer sequence of the latest delivery.
	Sequence uint64
	// Timestamp is when it was delivered, in Unix nanoseconds.
	Timestamp int64
}

// ConsumerState is what a durable consumer must remember across restarts.
type ConsumerState struct {
	// Delivered is the highest delivered pair; AckFloor the highest pair
	// below which everything is acknowledged.
	Delivered SequencePair
	AckFloor  SequencePair
	// Pending maps stream sequences to their outstanding delivery.
	Pending map[uint64]Pending
	// Redelivered maps stream sequences to how often they were
	// redelivered.
	Redelivered map[uint64]uint64
}

// ConsumerStore persists one consumer's state. Implementations decide how
// often to write; a file engine appends changes rather than rewriting
// whole files for each acknowledgement.
type ConsumerStore interface {
	// Update records the consumer's current state. The store must not
	// keep references to state's maps after it returns.
	Update(state *ConsumerState) error
	// State returns the last recorded state (a fresh copy).
	State() (*ConsumerState, error)
	// Close flushes and releases the store.
	Close() error
	// Delete closes the store and removes its data.
	Delete() error
}
