// Package memstore is leafbox's in-memory storage engine: a store.Stream
// (New) and a store.ConsumerStore (NewConsumerStore) that keep everything in
// process memory and lose it on exit. It passes the conformance suite in
// store/storetest, which is the specification of the semantics it shares
// with store/filestore.
//
// # Layout
//
// A Stream keeps its messages in sequence order in a log of fixed-size
// blocks of 512 slots (log.go), so it grows without copying and gives
// memory back a block at a time. Store appends; Load finds a sequence in
// O(1) while the log has no gaps and by binary search otherwise. A removed
// message leaves a tombstone that keeps its sequence; tombstones at the
// front are dropped at once, the others by compaction once they make up
// half the log, which keeps removal amortised O(1) and stops a KV bucket
// whose oldest key is never rewritten from pinning a slot per revision.
//
// Beside the log sits the per-subject index: for each subject its message
// count and the sequences of its first and last message, with the messages
// of a subject linked through their neighbours' sequences. Per-subject
// limits, LoadLast of a literal subject, SubjectsState and most
// FilteredState calls read the index instead of scanning; wildcard filters
// scan the log or the index, whichever is smaller.
//
// # Costs
//
// Store copies header and data into one new buffer and, for a subject the
// stream already holds, allocates nothing else apart from amortised log
// growth (one 36 KiB block per 512 messages, reused once emptied). A new
// subject costs one copy of the subject string and one index node, shared
// by all its messages. Each message costs 72 bytes of log slot beside its
// header and data.
//
// # Expiry
//
// MaxAge and per-message TTLs are enforced by one time.AfterFunc timer per
// stream, armed for the next due expiry (never sooner than 10ms ahead, so a
// busy stream wakes at most about 100 times a second) and stopped by Close.
// TTLs are ordered by a min-heap. A TTL below zero (with AllowMsgTTL) means
// "never": MaxAge does not expire that message.
//
// # Concurrency
//
// Every method is safe for concurrent use. A Stream has one sync.RWMutex:
// Store, Remove, Purge, UpdateConfig, Close and the expiry timer take it
// for writing; Load, LoadNext, LoadLast, State, FilteredState and
// SubjectsState for reading. Nothing outside the package is called with
// the lock held except core/subject's pure functions and the time package.
//
// # Ownership
//
// Store copies hdr and data. Load, LoadNext and LoadLast copy into the
// *store.Msg passed, reusing the capacity of its Header and Data, so pass a
// Msg whose slices you no longer need (or nil for a new one). Msg.Subject
// is shared with the store; strings are immutable, so that is safe.
package memstore
