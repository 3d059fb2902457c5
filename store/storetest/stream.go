package storetest

import (
	"testing"
)

// streamTest is one named case of the stream suite.
type streamTest struct {
	name string
	run  func(t *testing.T, open OpenStream)
}

// streamTests lists the suite; names form a path ("Limits/MaxMsgs/DiscardNew")
// so that -run can pick a group.
var streamTests = []streamTest{
	{"Store/SequencesStartAtOne", testSequencesStartAtOne},
	{"Store/SequencesNeverRepeat", testSequencesNeverRepeat},
	{"Store/CopiesInput", testStoreCopiesInput},
	{"Store/EmptyMessage", testStoreEmptyMessage},
	{"Store/InvalidSubject", testStoreInvalidSubject},
	{"Load/Fields", testLoadFields},
	{"Load/Errors", testLoadErrors},
	{"Load/ReturnsCopies", testLoadReturnsCopies},
	{"Remove", testRemove},
	{"Remove/All", testRemoveAll},
	{"State", testState},
	{"State/Bytes", testStateBytes},
	{"LoadNext", testLoadNext},
	{"LoadNext/Walk", testLoadNextWalk},
	{"LoadLast", testLoadLast},
	{"FilteredState", testFilteredState},
	{"SubjectsState", testSubjectsState},
	{"Query/CrossCheck", testQueryCrossCheck},
	{"Limits/MaxMsgs/DiscardOld", testMaxMsgsDiscardOld},
	{"Limits/MaxMsgs/DiscardNew", testMaxMsgsDiscardNew},
	{"Limits/MaxBytes/DiscardOld", testMaxBytesDiscardOld},
	{"Limits/MaxBytes/DiscardNew", testMaxBytesDiscardNew},
	{"Limits/MaxMsgsPerSubject", testMaxMsgsPerSubject},
	{"Limits/MaxMsgsPerSubject/KV", testMaxMsgsPerSubjectKV},
	{"Limits/MaxMsgsPerSubject/DiscardNew", testMaxMsgsPerSubjectDiscardNew},
	{"Limits/MaxMsgsPerSubject/DiscardNewPerSubject", testDiscardNewPerSubject},
	{"Limits/MaxMsgSize", testMaxMsgSize},
	{"Limits/MaxAge", testMaxAge},
	{"Limits/MaxAge/SequencesContinue", testMaxAgeSequencesContinue},
	{"TTL", testTTL},
	{"TTL/NeedsAllowMsgTTL", testTTLNeedsAllow},
	{"TTL/MaxAgeStillApplies", testTTLMaxAgeStillApplies},
	{"TTL/Never", testTTLNever},
	{"UpdateConfig/ShrinkMaxMsgs", testUpdateShrinkMaxMsgs},
	{"UpdateConfig/ShrinkMaxBytes", testUpdateShrinkMaxBytes},
	{"UpdateConfig/ShrinkMaxMsgsPerSubject", testUpdateShrinkPerSubject},
	{"UpdateConfig/PerSubjectFirst", testUpdatePerSubjectFirst},
	{"UpdateConfig/DiscardNewKeeps", testUpdateDiscardNewKeeps},
	{"UpdateConfig/MaxAge", testUpdateMaxAge},
	{"UpdateConfig/Invalid", testUpdateInvalid},
	{"Purge/All", testPurgeAll},
	{"Purge/Subject", testPurgeSubject},
	{"Purge/Wildcard", testPurgeWildcard},
	{"Purge/Keep", testPurgeKeep},
	{"Purge/KeepCountsMessages", testPurgeKeepCountsMessages},
	{"Purge/SubjectKeep", testPurgeSubjectKeep},
	{"Purge/Sequence", testPurgeSequence},
	{"Purge/SubjectSequence", testPurgeSubjectSequence},
	{"Purge/SequencePastEnd", testPurgeSequencePastEnd},
	{"Purge/Empty", testPurgeEmpty},
	{"Close", testClose},
	{"Delete", testDelete},
	{"Concurrent", testConcurrent},
}

// RunStreamTests runs the stream conformance suite against the engine open
// builds. Every case opens its own streams, so cases may run in any order;
// see the package documentation for the semantics they pin down.
func RunStreamTests(t *testing.T, open OpenStream) {
	for _, tc := range streamTests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, open) })
	}
}
