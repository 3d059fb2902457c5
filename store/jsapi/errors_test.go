package jsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/leafbox/leafbox/store/jsapi/internal/errgen"
)

// TestErrorsGeneratedUpToDate fails when errors_generated.go does not match
// errors.json; run `go generate ./store/jsapi/` to fix it.
func TestErrorsGeneratedUpToDate(t *testing.T) {
	table, err := os.ReadFile("errors.json")
	if err != nil {
		t.Fatal(err)
	}
	want, err := errgen.Generate(table)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("errors_generated.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("errors_generated.go is stale: run go generate ./store/jsapi/")
	}
}

// TestErrorCodes pins the codes clients branch on (NATS-COMPAT §4.3), as
// nats-server v2.15.2's errors.json defines them.
func TestErrorCodes(t *testing.T) {
	tests := []struct {
		err           *APIError
		code, errCode int
	}{
		{ErrBadRequest, 400, 10003},
		{ErrConsumerNotFound, 404, 10014},
		{ErrConsumerNameExist, 400, 10013},
		{ErrConsumerDurableNameNotInSubject, 400, 10016},
		{ErrConsumerDurableNameNotMatchSubject, 400, 10017},
		{ErrConsumerDurableNameNotSet, 400, 10018},
		{ErrConsumerEphemeralWithDurableInSubject, 400, 10019},
		{ErrConsumerEphemeralWithDurableName, 400, 10020},
		{ErrInsufficientResources, 503, 10023},
		{ErrInvalidJSON, 400, 10025},
		{ErrMaximumConsumersLimit, 400, 10026},
		{ErrNoMessageFound, 404, 10037},
		{ErrNotEmptyRequest, 400, 10038},
		{ErrNotEnabledForAccount, 503, 10039},
		{ErrStorageResourcesExceeded, 500, 10047},
		{ErrStreamCreate, 500, 10049},
		{ErrStreamInvalidConfig, 500, 10052},
		{ErrMessageExceedsMaximum, 400, 10054},
		{ErrStreamMismatch, 400, 10056},
		{ErrStreamNameExist, 400, 10058},
		{ErrStreamNotFound, 404, 10059},
		{ErrStreamNotMatch, 400, 10060},
		{ErrStreamSubjectOverlap, 400, 10065},
		{ErrStreamUpdate, 500, 10069},
		{ErrWrongLastMsgID, 400, 10070},
		{ErrWrongLastSequence, 400, 10071},
		{ErrReplicasNotSupported, 500, 10074},
		{ErrNotEnabled, 503, 10076},
		{ErrStreamStoreFailed, 503, 10077},
		{ErrConsumerSmallHeartbeat, 400, 10083},
		{ErrConsumerHBRequiresPush, 400, 10088},
		{ErrConsumerFCRequiresPush, 400, 10089},
		{ErrConsumerWQMultipleUnfiltered, 400, 10099},
		{ErrConsumerWQConsumerNotUnique, 400, 10100},
		{ErrConsumerExistingActive, 400, 10105},
		{ErrConsumerWithFlowControlNeedsHeartbeats, 400, 10108},
		{ErrStreamSealed, 400, 10109},
		{ErrStreamPurgeFailed, 500, 10110},
		{ErrStreamRollupFailed, 500, 10111},
		{ErrConsumerNameContainsPathSeparators, 400, 10127},
		{ErrStreamNameContainsPathSeparators, 400, 10128},
		{ErrConsumerCreateFilterSubjectMismatch, 400, 10131},
		{ErrConsumerDuplicateFilterSubjects, 400, 10136},
		{ErrConsumerMultipleFiltersNotAllowed, 400, 10137},
		{ErrConsumerOverlappingSubjectFilters, 400, 10138},
		{ErrConsumerEmptyFilter, 400, 10139},
		{ErrConsumerAlreadyExists, 400, 10148},
		{ErrConsumerDoesNotExist, 400, 10149},
		{ErrWrongLastSequenceConstant, 400, 10164},
		{ErrMessageTTLInvalid, 400, 10165},
		{ErrMessageTTLDisabled, 400, 10166},
	}
	for _, tc := range tests {
		if tc.err.Code != tc.code || int(tc.err.ErrCode) != tc.errCode {
			t.Errorf("%q: %d/%d, want %d/%d", tc.err.Description, tc.err.Code, tc.err.ErrCode, tc.code, tc.errCode)
		}
	}
}

// TestCapturedErrorsInTable checks every error nats-server sent in the
// captures against the table: same code and, for fixed texts, the same
// description.
func TestCapturedErrorsInTable(t *testing.T) {
	table, err := os.ReadFile("errors.json")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := errgen.Parse(table)
	if err != nil {
		t.Fatal(err)
	}
	byCode := map[uint16]errgen.Entry{}
	for _, e := range entries {
		byCode[e.ErrCode] = e
	}
	for _, c := range loadCaptures(t) {
		got := c.apiError(t)
		if got == nil {
			continue
		}
		e, ok := byCode[got.ErrCode]
		if !ok {
			t.Errorf("%s: err_code %d missing from errors.json", c.Name, got.ErrCode)
			continue
		}
		if e.Code != got.Code {
			t.Errorf("%s: err_code %d has code %d, table says %d", c.Name, got.ErrCode, got.Code, e.Code)
		}
		if !bytes.ContainsRune([]byte(e.Description), '{') && e.Description != got.Description {
			t.Errorf("%s: description %q, table says %q", c.Name, got.Description, e.Description)
		}
	}
}

func TestErrorConstructors(t *testing.T) {
	tests := []struct {
		got  *APIError
		want string
	}{
		{NewStreamNotFoundError(), "stream not found"},
		{NewWrongLastSequenceError(2), "wrong last sequence: 2"},
		{NewWrongLastMsgIDError("m1"), "wrong last msg ID: m1"},
		{NewInvalidJSONError(errors.New("unexpected EOF")), "invalid JSON: unexpected EOF"},
		{NewStreamInvalidConfigError(nil), "<nil>"},
		{NewConsumerNameTooLongError(255), "consumer name is too long, maximum allowed is 255"},
		{NewConsumerInactiveThresholdExcessError("10s"), "consumer inactive threshold exceeds system limit of 10s"},
		{NewSequenceNotFoundError(7), "sequence 7 not found"},
		{NewStreamExternalAPIOverlapError("$JS.API", "$JS.API"), "stream external api prefix $JS.API must not overlap with $JS.API"},
	}
	for _, tc := range tests {
		if tc.got.Description != tc.want {
			t.Errorf("description %q, want %q", tc.got.Description, tc.want)
		}
	}

	// A wrapping constructor never hides a more specific API error.
	inner := NewStreamNotFoundError()
	if got := NewStreamCreateError(fmt.Errorf("creating: %w", inner)); got != inner {
		t.Fatalf("wrapped API error replaced by %v", got)
	}
	// Constructors return fresh values; sentinels keep their text.
	e := NewStreamNotFoundError()
	e.Description = "changed"
	if ErrStreamNotFound.Description != "stream not found" {
		t.Fatal("constructor aliases the sentinel")
	}
}

func TestAPIErrorBehaviour(t *testing.T) {
	err := error(NewWrongLastSequenceError(5))
	if err.Error() != "wrong last sequence: 5 (10071)" {
		t.Fatalf("Error() = %q", err.Error())
	}
	if !errors.Is(err, ErrWrongLastSequence) {
		t.Fatal("errors.Is by err_code failed")
	}
	if errors.Is(err, ErrStreamNotFound) {
		t.Fatal("errors.Is matched another err_code")
	}
	if !errors.Is(fmt.Errorf("publish: %w", err), ErrWrongLastSequence) {
		t.Fatal("errors.Is through wrapping failed")
	}
	got, _ := json.Marshal(NewStreamNotFoundError())
	if string(got) != `{"code":404,"err_code":10059,"description":"stream not found"}` {
		t.Fatalf("JSON %s", got)
	}
}

func TestErrgenRejectsBadTables(t *testing.T) {
	tests := map[string]string{
		"duplicate code":    `[{"name":"A","code":400,"err_code":1,"description":"a"},{"name":"B","code":400,"err_code":1,"description":"b"}]`,
		"duplicate name":    `[{"name":"A","code":400,"err_code":1,"description":"a"},{"name":"A","code":400,"err_code":2,"description":"b"}]`,
		"bad name":          `[{"name":"lower","code":400,"err_code":1,"description":"a"}]`,
		"bad code":          `[{"name":"A","code":42,"err_code":1,"description":"a"}]`,
		"untyped arg":       `[{"name":"A","code":400,"err_code":1,"description":"{what}"}]`,
		"unsupported arg":   `[{"name":"A","code":400,"err_code":1,"description":"{x}","args":{"x":"time.Duration"}}]`,
		"unknown member":    `[{"name":"A","code":400,"err_code":1,"description":"a","extra":1}]`,
		"empty description": `[{"name":"A","code":400,"err_code":1,"description":""}]`,
	}
	for name, table := range tests {
		if _, err := errgen.Generate([]byte(table)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	src, err := errgen.Generate([]byte(`[{"name":"A","code":400,"err_code":1,"description":"x {n} y {err}","args":{"n":"int64"},"comment":"Test."}]`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"func NewAError(n int64, err error) *APIError", `"x " + strconv.FormatInt(n, 10) + " y " + errText(err)`, "Test."} {
		if !bytes.Contains(src, []byte(want)) {
			t.Errorf("generated source lacks %q", want)
		}
	}
}
