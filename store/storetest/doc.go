// Package storetest is the conformance suite for store engines: every
// store.Stream and store.ConsumerStore implementation runs it from its own
// tests, so that the memory and file engines behave identically.
//
//	func TestStream(t *testing.T) {
//		storetest.RunStreamTests(t, func(t *testing.T, cfg store.Config) store.Stream {
//			s, err := memstore.New(cfg)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// The age and TTL cases (Limits/MaxAge…, TTL…, UpdateConfig/MaxAge) run
// inside a testing/synctest bubble and call the opener there, so the
// stream runs on the bubble's clock and expiry is checked on both sides of
// its due time without real waiting.
//
// RunStreamTests runs named cases (Store/…, Load/…, LoadNext, Limits/…,
// TTL/…, UpdateConfig/…, Purge/…, Close, Delete, Concurrent) that each open
// fresh streams. RunModelTest drives random operations against a naive
// reference model and compares every result; run it with several seeds.
// RunConsumerStoreTests covers consumer state. CheckPrefix and CheckResume
// are for crash tests: after recovery, every acknowledged message is
// present and sequences go on above it.
//
// # Semantics the suite pins down
//
// Where store.go leaves a detail open, the suite decides it, following
// nats-server v2.15.2 unless noted:
//
//   - A new stream's State is the zero value (FirstSeq 0). Sequences start
//     at 1 and are never reused. LastSeq is the last sequence assigned, even
//     once that message is removed; LastTime is that message's store time.
//     Whenever a removal, purge or expiry empties the stream, FirstSeq
//     becomes LastSeq+1 and FirstTime zero. NumDeleted is
//     LastSeq-FirstSeq+1-Msgs for a non-empty stream, else 0.
//   - Load: sequence 0 and sequences above LastSeq give ErrNotFound; any
//     other missing sequence (removed, purged, evicted, expired or skipped
//     by a purge) gives ErrDeleted. LoadNext and LoadLast give ErrNotFound
//     when nothing matches. Loaded slices belong to the caller.
//   - Store rejects a subject that is not a valid literal subject with an
//     error (store.go has no sentinel for it) and uses no sequence.
//   - FilteredState with no match is the zero value; its Last is the last
//     matching message held. SubjectsState with no match is empty.
//   - Limits on Store: MaxMsgSize bounds len(hdr)+len(data). Under
//     DiscardOld the new message is stored, then each subject is cut to
//     MaxMsgsPerSubject, then the oldest messages go while MaxMsgs or
//     MaxBytes is exceeded; a message larger than MaxBytes on its own is
//     rejected with ErrMaxBytes (nats-server stores it and evicts it at
//     once). Under DiscardNew: a subject at MaxMsgsPerSubject gives
//     ErrMaxMsgsPerSubject with DiscardNewPerSubject, else the new message
//     replaces the subject's oldest, so it does not count against MaxMsgs
//     and counts only its size difference against MaxBytes; otherwise
//     ErrMaxMsgs when Msgs ≥ MaxMsgs and ErrMaxBytes when Bytes+size >
//     MaxBytes (a stream may hold exactly MaxBytes).
//   - UpdateConfig cuts subjects to MaxMsgsPerSubject first, then, under
//     DiscardOld only, evicts for MaxMsgs and MaxBytes (nats-server applies
//     MaxMsgs and MaxBytes first, which can keep fewer messages than the
//     limits allow). Under DiscardNew a lowered MaxMsgs or MaxBytes evicts
//     nothing. Invalid values give ErrInvalidConfig and change nothing.
//   - Expiry: MaxAge and TTLs remove messages no earlier than due. A ttl
//     passed to Store is ignored without AllowMsgTTL; with it, ttl > 0
//     expires the message after ttl nanoseconds and ttl < 0 exempts it from
//     MaxAge ("Nats-TTL: never"). MaxAge also expires a message whose TTL
//     is longer.
//   - Purge: the options combine. The candidates are the messages matching
//     Subject ("" and ">" match all) below Sequence (when non-zero), removed
//     oldest first while more than Keep matching messages remain; Keep
//     counts messages, not sequences. Sequence 1 purges nothing. An
//     unfiltered purge without Keep sets FirstSeq to LastSeq+1 when it
//     empties the stream, and one with Sequence above LastSeq+1 also makes
//     Sequence the next sequence assigned (LastSeq becomes Sequence-1).
//   - Close and Delete: afterwards every method with an error result
//     returns ErrClosed; the others must not panic. A second Close or
//     Delete must not panic.
package storetest
