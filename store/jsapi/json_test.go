package jsapi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// responseTypes maps each response type string to a constructor of the
// matching Go type.
var responseTypes = map[string]func() any{
	AccountInfoResponseType:    func() any { return new(AccountInfoResponse) },
	StreamCreateResponseType:   func() any { return new(StreamCreateResponse) },
	StreamUpdateResponseType:   func() any { return new(StreamUpdateResponse) },
	StreamInfoResponseType:     func() any { return new(StreamInfoResponse) },
	StreamNamesResponseType:    func() any { return new(StreamNamesResponse) },
	StreamListResponseType:     func() any { return new(StreamListResponse) },
	StreamDeleteResponseType:   func() any { return new(StreamDeleteResponse) },
	StreamPurgeResponseType:    func() any { return new(StreamPurgeResponse) },
	MsgGetResponseType:         func() any { return new(MsgGetResponse) },
	MsgDeleteResponseType:      func() any { return new(MsgDeleteResponse) },
	ConsumerCreateResponseType: func() any { return new(ConsumerCreateResponse) },
	ConsumerInfoResponseType:   func() any { return new(ConsumerInfoResponse) },
	ConsumerDeleteResponseType: func() any { return new(ConsumerDeleteResponse) },
	ConsumerNamesResponseType:  func() any { return new(ConsumerNamesResponse) },
	ConsumerListResponseType:   func() any { return new(ConsumerListResponse) },
	ConsumerPauseResponseType:  func() any { return new(ConsumerPauseResponse) },
}

// TestCapturedResponsesRoundTrip decodes every response nats-server sent,
// strictly (an unknown member fails), re-encodes it and requires the same
// JSON: every field name, every omitempty choice and every enum string of
// the types must agree with nats-server's, for successes and errors.
func TestCapturedResponsesRoundTrip(t *testing.T) {
	for _, c := range loadCaptures(t) {
		t.Run(c.Name, func(t *testing.T) {
			var head struct {
				Type string `json:"type"`
			}
			mustUnmarshal(t, c.Response, &head)
			var v any
			switch {
			case head.Type == "":
				v = new(PubAckResponse)
			case responseTypes[head.Type] != nil:
				v = responseTypes[head.Type]()
			default:
				t.Fatalf("no Go type for %q", head.Type)
			}
			if err := DecodeRequest(c.Response, v); err != nil {
				t.Fatalf("strict decode: %v", err)
			}
			requireSameJSON(t, mustMarshal(t, v), c.Response)
		})
	}
}

// TestMinimalStreamConfigEcho builds the echo of a stream created with
// only a name and compares it with nats-server's, member by member: the
// always-present zero values (allow_direct, sealed, consumer_limits {},
// ...) and the omitted ones (description, no_ack, first_seq, ...).
func TestMinimalStreamConfigEcho(t *testing.T) {
	c := captureByName(t, loadCaptures(t), "stream_create_minimal")
	var resp struct {
		Config json.RawMessage `json:"config"`
	}
	mustUnmarshal(t, c.Response, &resp)

	cfg := StreamConfig{Name: "ORDERS"}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	requireSameJSON(t, mustMarshal(t, &cfg), dropServerMetadata(t, resp.Config))
}

func TestEnumJSON(t *testing.T) {
	tests := []struct {
		value enumValue
		wire  string
		zero  bool
		into  func([]byte) (enumValue, error)
	}{
		{LimitsPolicy, `"limits"`, true, decodeEnum[RetentionPolicy]},
		{InterestPolicy, `"interest"`, false, decodeEnum[RetentionPolicy]},
		{WorkQueuePolicy, `"workqueue"`, false, decodeEnum[RetentionPolicy]},
		{DiscardOld, `"old"`, true, decodeEnum[DiscardPolicy]},
		{DiscardNew, `"new"`, false, decodeEnum[DiscardPolicy]},
		{FileStorage, `"file"`, true, decodeEnum[StorageType]},
		{MemoryStorage, `"memory"`, false, decodeEnum[StorageType]},
		{NoCompression, `"none"`, true, decodeEnum[Compression]},
		{S2Compression, `"s2"`, false, decodeEnum[Compression]},
		{DefaultPersist, `"default"`, true, decodeEnum[PersistMode]},
		{AsyncPersist, `"async"`, false, decodeEnum[PersistMode]},
		{DeliverAll, `"all"`, true, decodeEnum[DeliverPolicy]},
		{DeliverLast, `"last"`, false, decodeEnum[DeliverPolicy]},
		{DeliverNew, `"new"`, false, decodeEnum[DeliverPolicy]},
		{DeliverByStartSequence, `"by_start_sequence"`, false, decodeEnum[DeliverPolicy]},
		{DeliverByStartTime, `"by_start_time"`, false, decodeEnum[DeliverPolicy]},
		{DeliverLastPerSubject, `"last_per_subject"`, false, decodeEnum[DeliverPolicy]},
		{AckNone, `"none"`, true, decodeEnum[AckPolicy]},
		{AckAll, `"all"`, false, decodeEnum[AckPolicy]},
		{AckExplicit, `"explicit"`, false, decodeEnum[AckPolicy]},
		{AckFlowControl, `"flow_control"`, false, decodeEnum[AckPolicy]},
		{ReplayInstant, `"instant"`, true, decodeEnum[ReplayPolicy]},
		{ReplayOriginal, `"original"`, false, decodeEnum[ReplayPolicy]},
		{PriorityNone, `"none"`, true, decodeEnum[PriorityPolicy]},
		{PriorityOverflow, `"overflow"`, false, decodeEnum[PriorityPolicy]},
		{PriorityPinnedClient, `"pinned_client"`, false, decodeEnum[PriorityPolicy]},
		{PriorityPrioritized, `"prioritized"`, false, decodeEnum[PriorityPolicy]},
		{ActionCreateOrUpdate, `""`, true, decodeEnum[ConsumerAction]},
		{ActionUpdate, `"update"`, false, decodeEnum[ConsumerAction]},
		{ActionCreate, `"create"`, false, decodeEnum[ConsumerAction]},
	}
	for _, tc := range tests {
		t.Run(tc.wire, func(t *testing.T) {
			b, err := tc.value.MarshalJSON()
			if err != nil || string(b) != tc.wire {
				t.Fatalf("marshal %v = %s, %v; want %s", tc.value, b, err, tc.wire)
			}
			if tc.value.String() != strings.Trim(tc.wire, `"`) {
				t.Fatalf("String() = %q", tc.value.String())
			}
			back, err := tc.into(b)
			if err != nil || back != tc.value {
				t.Fatalf("unmarshal %s = %v, %v", b, back, err)
			}
			if _, err := tc.into([]byte(`"bogus"`)); err == nil {
				t.Fatal("unknown name accepted")
			}
			if _, err := tc.into([]byte(`1`)); err == nil {
				t.Fatal("number accepted")
			}
			if z, err := tc.into([]byte(`null`)); err != nil || (tc.zero && z != tc.value) {
				t.Fatalf("null = %v, %v", z, err)
			}
		})
	}
}

func decodeEnum[T any, P interface {
	*T
	json.Unmarshaler
}](b []byte) (v enumValue, err error) {
	var x T
	err = P(&x).UnmarshalJSON(b)
	return any(x).(enumValue), err
}

// enumValue is the interface every enum value satisfies.
type enumValue = interface {
	json.Marshaler
	String() string
}

func TestEnumSpecialCases(t *testing.T) {
	var d DiscardPolicy
	if err := d.UnmarshalJSON([]byte(`"NEW"`)); err != nil || d != DiscardNew {
		t.Fatalf("discard is case-insensitive in nats-server: %v %v", d, err)
	}
	var r RetentionPolicy
	if err := r.UnmarshalJSON([]byte(`"Limits"`)); err == nil {
		t.Fatal("retention is case-sensitive in nats-server")
	}
	var p DeliverPolicy
	if err := p.UnmarshalJSON([]byte(`"undefined"`)); err != nil || p != DeliverAll {
		t.Fatalf("undefined = %v, %v", p, err)
	}
	if b, _ := DeliverPolicy(42).MarshalJSON(); string(b) != `"undefined"` {
		t.Fatalf("out-of-range deliver policy = %s", b)
	}
	var m PersistMode
	if err := m.UnmarshalJSON([]byte(`""`)); err != nil || m != DefaultPersist {
		t.Fatalf(`persist "" = %v, %v`, m, err)
	}
	if _, err := RetentionPolicy(9).MarshalJSON(); err == nil {
		t.Fatal("out-of-range retention marshalled")
	}
	if s := StorageType(9).String(); s != "unknown(9)" {
		t.Fatalf("String() = %q", s)
	}
	// The decode error reaches clients inside 10025; it is nats-server's.
	var cfg StreamConfig
	err := DecodeRequest([]byte(`{"name":"BR","retention":"forever"}`), &cfg)
	want := `invalid JSON: can not unmarshal "\"forever\""`
	if err == nil || err.Description != want {
		t.Fatalf("got %v, want %q", err, want)
	}
}

func TestDecodeRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want string // description, "" for success
	}{
		{"empty", ``, ""},
		{"object", `{"name":"S"}`, ""},
		{"unknown field", `{"name":"S","bogus":1}`, `invalid JSON: json: unknown field "bogus"`},
		{"truncated", `{"name":`, "invalid JSON: unexpected EOF"},
		{"syntax", `{"name" "S"}`, "invalid JSON: invalid character '\"' after object key at offset 9"},
		// encoding/json names Go types here, which differ from nats-server's.
		{"wrong type", `{"name":1}`, "*"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg StreamCreateRequest
			err := DecodeRequest([]byte(tc.body), &cfg)
			if tc.want == "" {
				requireAPIError(t, err, nil)
				return
			}
			requireErrCode(t, err, ErrInvalidJSON)
			if tc.want != "*" && err.Description != tc.want {
				t.Fatalf("description %q, want %q", err.Description, tc.want)
			}
		})
	}
	// The truncated body is one of the captured cases.
	c := captureByName(t, loadCaptures(t), "stream_create_invalid_json")
	var req StreamCreateRequest
	requireAPIError(t, DecodeRequest(c.body(t), &req), c.apiError(t))
}

func TestIsEmptyRequest(t *testing.T) {
	for body, want := range map[string]bool{
		"": true, "{}": true, " { } ": true, `{"x":1}`: false, "[]": false, "x": false, "null": false,
	} {
		if got := IsEmptyRequest([]byte(body)); got != want {
			t.Errorf("IsEmptyRequest(%q) = %v", body, got)
		}
	}
}

func TestErrorResponsesAndPubAcks(t *testing.T) {
	got := mustMarshal(t, &StreamCreateResponse{APIResponse: *ErrorResponse(StreamCreateResponseType, NewStreamMismatchError())})
	requireSameJSON(t, got, captureByName(t, loadCaptures(t), "stream_create_mismatch").Response)

	got = mustMarshal(t, ErrorPubAck("ORDERS", NewWrongLastSequenceError(2)))
	requireSameJSON(t, got, captureByName(t, loadCaptures(t), "pub_wrong_last_seq").Response)

	got = mustMarshal(t, &PubAckResponse{PubAck: &PubAck{Stream: "ORDERS", Sequence: 2, Duplicate: true}})
	requireSameJSON(t, got, captureByName(t, loadCaptures(t), "pub_ack_duplicate").Response)

	got = mustMarshal(t, &PubAckResponse{PubAck: &PubAck{Stream: "S", Sequence: 1, Domain: "edge"}})
	requireSameJSON(t, got, []byte(`{"stream":"S","seq":1,"domain":"edge"}`))
}

func TestStreamStateEmpty(t *testing.T) {
	// An empty stream reports zero times, which nats-server sends as
	// "0001-01-01T00:00:00Z", and omits the optional counters.
	got := mustMarshal(t, &StreamState{})
	want := `{"messages":0,"bytes":0,"first_seq":0,"first_ts":"0001-01-01T00:00:00Z","last_seq":0,"last_ts":"0001-01-01T00:00:00Z","consumer_count":0}`
	requireSameJSON(t, got, []byte(want))
}

func TestNextRequestJSON(t *testing.T) {
	// nats.go's Consume request, as it sends it.
	body := `{"expires":30000000000,"batch":500,"max_bytes":0,"idle_heartbeat":15000000000}`
	var r NextRequest
	if err := DecodeRequest([]byte(body), &r); err != nil {
		t.Fatal(err)
	}
	if r.Batch != 500 || r.Expires != 30*time.Second || r.Heartbeat != 15*time.Second {
		t.Fatalf("decoded %+v", r)
	}
	requireSameJSON(t, mustMarshal(t, &NextRequest{Batch: 1, NoWait: true, PriorityGroup: PriorityGroup{Group: "g", MinPending: 3}}),
		[]byte(`{"batch":1,"no_wait":true,"group":"g","min_pending":3}`))
}

func TestDecodeReply(t *testing.T) {
	ack, apiErr, err := DecodePubAck([]byte(`{"stream":"S","seq":7,"duplicate":true,"domain":"hub"}`))
	if err != nil || apiErr != nil || ack != (PubAck{Stream: "S", Sequence: 7, Duplicate: true, Domain: "hub"}) {
		t.Fatalf("success: %+v %v %v", ack, apiErr, err)
	}
	ack, apiErr, err = DecodePubAck([]byte(`{"error":{"code":503,"err_code":10077,"description":"store failed"},"stream":"S"}`))
	if err != nil || apiErr == nil || apiErr.Code != 503 || apiErr.ErrCode != 10077 || apiErr.Description != "store failed" || ack.Stream != "S" {
		t.Fatalf("refusal: %+v %+v %v", ack, apiErr, err)
	}
	for _, bad := range []string{"", "nope", `{"seq":"x"}`, `[1]`} {
		if _, apiErr, err := DecodePubAck([]byte(bad)); err == nil || apiErr != nil {
			t.Errorf("%q: %v %v, want a decode error", bad, apiErr, err)
		}
	}
	if ack, apiErr, err := DecodePubAck([]byte(`{}`)); err != nil || apiErr != nil || ack != (PubAck{}) {
		t.Fatalf("{}: %+v %v %v", ack, apiErr, err)
	}

	// A caller's struct with only the fields it reads.
	var names struct {
		APIResponse
		Streams []string `json:"streams"`
	}
	apiErr, err = DecodeReply([]byte(`{"type":"`+StreamNamesResponseType+`","total":1,"streams":["S"]}`), &names)
	if err != nil || apiErr != nil || names.Type != StreamNamesResponseType || len(names.Streams) != 1 {
		t.Fatalf("names: %+v %v %v", names, apiErr, err)
	}
	var resp APIResponse
	apiErr, err = DecodeReply([]byte(`{"type":"t","error":{"code":404,"err_code":10059,"description":"stream not found"}}`), &resp)
	if err != nil || apiErr == nil || apiErr.Error() != "stream not found (10059)" {
		t.Fatalf("error: %v %v", apiErr, err)
	}
}
