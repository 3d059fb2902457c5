// Package sublist maps subscription subjects to the values subscribed on
// them and answers "who is interested in this published subject?".
//
// # Model
//
// A Sublist holds entries. An entry is a triple (subject, queue, value):
// subject is a valid subscription subject (see package core/subject) that may
// hold "*" and ">" tokens, queue is a queue group name or "" for a plain
// subscriber, and value is whatever the caller keys subscriptions by
// (typically a *subscription pointer).
//
// The same value may be inserted under several subjects or queues; each
// insertion is a separate entry. Inserting the same triple twice is counted,
// not rejected: the triple then matches twice, Count and Walk see it twice,
// and it takes two calls to Remove to delete it. (The server never does this;
// it keys entries by subscription.)
//
// Match returns a Result holding one element per matching entry: plain
// values in Result.Plain, queue values grouped by queue name in
// Result.Queues, with members from every matching subject merged into one
// Queue per name. The order of values and of queues is unspecified.
// A publish subject that is not a valid literal subject (empty, an empty
// token, whitespace, or a "*" or ">" token) matches nothing.
//
// # Result ownership
//
// A *Result is an immutable snapshot shared between callers and with the
// internal cache: callers must not modify it, its slices, or the Members of
// its queues. Its slices carry no spare capacity, so a caller that appends
// to one gets a private copy. A Result stays valid forever; later Insert and
// Remove calls build new Results (copy on write) rather than changing old
// ones. Every subject with no interest returns the same empty Result.
//
// Match and MatchBytes do not retain their argument; on a cache miss they
// copy the subject before caching it. Insert likewise copies the tokens and
// queue names it stores, so no caller memory is pinned.
//
// # Cache
//
// Match results are cached per valid literal subject, up to 1024 subjects;
// a random entry is evicted when the cache is full. Invalid subjects are
// never cached. The cache always holds exactly what a fresh trie walk would
// return: changes keep it so while holding the write lock, and a cache hit
// takes only a read lock and allocates nothing.
//
//   - Insert replaces the cached result of every subject its pattern
//     matches with an updated copy (copy on write).
//   - Remove drops the cached results its pattern matches; the next Match
//     of such a subject rebuilds it. Removal never copies results: under
//     the write lock a removal costs one map deletion for a literal
//     subject and one subject match per cached subject for a wildcard,
//     whatever the size of the cached results.
//   - RemoveBatch does the same for many entries at once, with its cache
//     work bounded: when its wildcards times the cached subjects exceed
//     the cache size (1024 subject matches), it empties the cache instead
//     of sweeping it. A connection that closes with thousands of
//     subscriptions, or thousands of connections that close at once,
//     therefore hold the lock for a bounded time each, and a new
//     subscriber or a cache miss waits for at most one such hold per
//     closing batch, never for a rewrite of every cached result per entry.
//
// # Memo
//
// A caller that matches the same subject many times in a row (a
// publisher's read loop) can keep a Memo and call MatchBytesMemo: a repeat
// is answered from the Memo with one atomic load of a generation counter
// and one subject comparison, without the locks, the hash or the shared
// hit counter. Insert, Remove and RemoveBatch bump the counter under
// mu.Lock after changing the trie and the cache, and a Memo's result
// counts only while the counter has not moved since the Memo matched, so
// a match that begins after a change returned always sees it. Memo hits
// reach Stats as cache hits when the caller flushes them (FlushStats, or
// Forget, which also drops the result so that an idle caller pins nothing).
//
// # Locking
//
// A Sublist is safe for concurrent use. It has two locks, always taken in
// this order:
//
//	Sublist.mu (trie and count) → Sublist.cacheMu (match cache)
//
// Cache hits take cacheMu.RLock only. Misses walk the trie under mu.RLock and
// store the result under cacheMu.Lock while still holding mu.RLock, so no
// Insert or Remove can run between computing a result and caching it.
// Insert, Remove and RemoveBatch hold mu.Lock and take cacheMu.Lock to update
// the cache; RemoveBatch takes each lock once for the whole batch.
// Walk copies the entries under mu.RLock and calls its function with no lock
// held, so the function may call back into the Sublist.
//
// The zero Sublist is empty and ready to use; New is a convenience. A
// Sublist must not be copied after first use.
package sublist
