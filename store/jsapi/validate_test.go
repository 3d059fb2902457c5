package jsapi

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/store"
)

// The capture replays (capture_test.go) cover the rules nats-server was
// asked about over the wire. The tables below cover the rest: limits from
// Options, sizes too large to capture, and the helpers' own contracts.

func TestStreamNormalizeRules(t *testing.T) {
	big := map[string]string{"k": strings.Repeat("v", MaxMetadataLen)}
	tests := []struct {
		name string
		cfg  StreamConfig
		opts Options
		want *APIError // nil: success; compared by code and err_code
		desc string    // exact description when set
		then func(t *testing.T, c *StreamConfig)
	}{
		{name: "metadata too long", cfg: StreamConfig{Name: "S", Metadata: big},
			want: ErrStreamInvalidConfig, desc: "stream metadata exceeds maximum size of 131072 bytes"},
		{name: "empty name", cfg: StreamConfig{}, want: ErrStreamInvalidConfig},
		{name: "name with space", cfg: StreamConfig{Name: "a b"}, want: ErrStreamInvalidConfig},
		{name: "name with tab", cfg: StreamConfig{Name: "a\tb"}, want: ErrStreamInvalidConfig},
		{name: "name of 255", cfg: StreamConfig{Name: strings.Repeat("n", 255)}},
		{name: "max_msg_size below -1", cfg: StreamConfig{Name: "S", MaxMsgSize: -7},
			then: func(t *testing.T, c *StreamConfig) {
				if c.MaxMsgSize != -1 || c.MaxConsumers != -1 {
					t.Fatalf("got %d %d", c.MaxMsgSize, c.MaxConsumers)
				}
			}},
		{name: "pedantic max_msg_size", cfg: StreamConfig{Name: "S", MaxMsgSize: -7}, opts: Options{Pedantic: true},
			want: ErrPedantic, desc: "pedantic mode: max_msg_size must be set to -1"},
		{name: "server duplicate limit caps default", cfg: StreamConfig{Name: "S"}, opts: Options{MaxDuplicateWindow: time.Minute},
			then: func(t *testing.T, c *StreamConfig) {
				if c.DuplicateWindow != time.Minute {
					t.Fatalf("duplicate_window %v", c.DuplicateWindow)
				}
			}},
		{name: "server duplicate limit pedantic", cfg: StreamConfig{Name: "S"}, opts: Options{MaxDuplicateWindow: time.Minute, Pedantic: true},
			want: ErrPedantic},
		{name: "duplicate over server limit", cfg: StreamConfig{Name: "S", DuplicateWindow: time.Hour}, opts: Options{MaxDuplicateWindow: time.Minute},
			want: ErrStreamInvalidConfig, desc: "duplicates window can not be larger then server limit of 1m0s"},
		{name: "mirror gets no default duplicate window", cfg: StreamConfig{Name: "M", Mirror: &StreamSource{Name: "O"}},
			then: func(t *testing.T, c *StreamConfig) {
				if c.DuplicateWindow != 0 || c.Subjects != nil {
					t.Fatalf("duplicate_window %v subjects %v", c.DuplicateWindow, c.Subjects)
				}
			}},
		{name: "max bytes required", cfg: StreamConfig{Name: "S"}, opts: Options{MaxBytesRequired: true}, want: ErrStreamMaxBytesRequired},
		{name: "max bytes over file limit", cfg: StreamConfig{Name: "S", MaxBytes: 10}, opts: Options{StoreMaxStreamBytes: 5},
			want: ErrStreamMaxStreamBytesExceeded},
		{name: "memory limit does not apply to file", cfg: StreamConfig{Name: "S", MaxBytes: 10}, opts: Options{MemoryMaxStreamBytes: 5}},
		{name: "max bytes over memory limit", cfg: StreamConfig{Name: "S", MaxBytes: 10, Storage: MemoryStorage}, opts: Options{MemoryMaxStreamBytes: 5},
			want: ErrStreamMaxStreamBytesExceeded},
		{name: "invalid enum value", cfg: StreamConfig{Name: "S", Retention: 7}, want: ErrStreamInvalidConfig, desc: "invalid retention"},
		{name: "invalid storage value", cfg: StreamConfig{Name: "S", Storage: 7}, want: ErrStreamInvalidConfig, desc: "invalid storage type"},
		{name: "marker ttl turns on rollups", cfg: StreamConfig{Name: "S", SubjectDeleteMarkerTTL: time.Second, DenyPurge: true},
			then: func(t *testing.T, c *StreamConfig) {
				if !c.AllowMsgTTL || !c.AllowRollup || c.DenyPurge {
					t.Fatalf("ttl %v rollup %v deny_purge %v", c.AllowMsgTTL, c.AllowRollup, c.DenyPurge)
				}
			}},
		{name: "schedules pedantic without rollup", cfg: StreamConfig{Name: "S", AllowMsgSchedules: true}, opts: Options{Pedantic: true},
			want: ErrStreamInvalidConfig, desc: "message scheduling cannot be set if roll-ups are disabled"},
		{name: "counter needs limits retention", cfg: StreamConfig{Name: "S", AllowMsgCounter: true, Retention: InterestPolicy},
			want: ErrStreamInvalidConfig, desc: "counter stream can only use limits retention"},
		{name: "async with atomic", cfg: StreamConfig{Name: "S", PersistMode: AsyncPersist, AllowAtomicPublish: true},
			want: ErrStreamInvalidConfig},
		{name: "mirror with atomic", cfg: StreamConfig{Name: "M", Mirror: &StreamSource{Name: "O"}, AllowAtomicPublish: true},
			want: ErrMirrorWithAtomicPublish},
		{name: "mirror with batch", cfg: StreamConfig{Name: "M", Mirror: &StreamSource{Name: "O"}, AllowBatchPublish: true},
			want: ErrMirrorWithBatchPublish},
		{name: "mirror with schedules", cfg: StreamConfig{Name: "M", Mirror: &StreamSource{Name: "O"}, AllowMsgSchedules: true},
			want: ErrMirrorWithMsgSchedules},
		{name: "mirror external api not literal", cfg: StreamConfig{Name: "M", Mirror: &StreamSource{Name: "O", External: &ExternalStream{APIPrefix: "$JS.*.API"}}},
			want: ErrStreamInvalidConfig, desc: `stream external api prefix "$JS.*.API" must be a valid subject without wildcards`},
		{name: "mirror transform bad source", cfg: StreamConfig{Name: "M", Mirror: &StreamSource{Name: "O", SubjectTransforms: []SubjectTransformConfig{{Source: "a..b", Destination: "x"}}}},
			want: ErrMirrorInvalidSubjectFilter, desc: "mirror transform source: invalid subject a..b"},
		{name: "mirror transform bad dest", cfg: StreamConfig{Name: "M", Mirror: &StreamSource{Name: "O", SubjectTransforms: []SubjectTransformConfig{{Source: "a.*", Destination: "x.{{wildcard(3)}}"}}}},
			want: ErrMirrorInvalidTransformDestination, desc: "mirror transform: invalid mapping destination: wildcard index out of range in {{wildcard(3)}}: [3]"},
		{name: "source consumer duplicate", cfg: StreamConfig{Name: "S", Sources: []*StreamSource{
			{Name: "A", FilterSubject: "a", Consumer: &StreamConsumerSource{Name: "c", DeliverSubject: "d"}},
			{Name: "A", FilterSubject: "b", Consumer: &StreamConsumerSource{Name: "c", DeliverSubject: "d"}}}},
			want: ErrSourceDurableConsumerCfgInvalid},
		{name: "source consumer ok then duplicate", cfg: StreamConfig{Name: "S", Sources: []*StreamSource{
			{Name: "A", SubjectTransforms: []SubjectTransformConfig{{Source: "a", Destination: "a"}}, Consumer: &StreamConsumerSource{Name: "c", DeliverSubject: "d"}},
			{Name: "A", SubjectTransforms: []SubjectTransformConfig{{Source: "b", Destination: "b"}}, Consumer: &StreamConsumerSource{Name: "c", DeliverSubject: "d"}}}},
			want: ErrSourceDurableConsumerDuplicateDetected},
		{name: "nil source", cfg: StreamConfig{Name: "S", Sources: []*StreamSource{nil}}, want: ErrSourceInvalidStreamName},
		{name: "source external deliver with wildcard", cfg: StreamConfig{Name: "S", Sources: []*StreamSource{{Name: "A", External: &ExternalStream{APIPrefix: "$JS.x.API", DeliverPrefix: ">"}}}},
			want: ErrStreamInvalidExternalDeliverySubj},
		{name: "empty republish dest is accepted", cfg: StreamConfig{Name: "S", RePublish: &RePublish{Source: "S"}}},
		{name: "implicit republish", cfg: StreamConfig{Name: "S", Subjects: []string{"in"},
			SubjectTransform: &SubjectTransformConfig{Source: "in", Destination: "out"}, RePublish: &RePublish{Destination: ">"}},
			then: func(t *testing.T, c *StreamConfig) {
				if c.RePublish.Source != "out" || c.RePublish.Destination != "out" {
					t.Fatalf("republish %+v", c.RePublish)
				}
			}},
		{name: "replicas 2", cfg: StreamConfig{Name: "S", Replicas: 2}, want: ErrReplicasNotSupported},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cfg.Clone()
			err := tc.cfg.NormalizeWith(tc.opts)
			requireErrCode(t, err, tc.want)
			if tc.desc != "" && err.Description != tc.desc {
				t.Fatalf("description %q, want %q", err.Description, tc.desc)
			}
			if err != nil && !reflect.DeepEqual(&tc.cfg, before) {
				t.Fatal("config changed by a failed Normalize")
			}
			if tc.then != nil {
				tc.then(t, &tc.cfg)
			}
		})
	}
}

func TestStreamHelpers(t *testing.T) {
	cfg := StreamConfig{Name: "S", Subjects: []string{"a"}, Metadata: map[string]string{"x": "1"},
		Mirror: &StreamSource{Name: "O", External: &ExternalStream{APIPrefix: "p"}}, Placement: &Placement{Tags: []string{"t"}}}
	clone := cfg.Clone()
	clone.Subjects[0], clone.Metadata["x"], clone.Mirror.External.APIPrefix, clone.Placement.Tags[0] = "b", "2", "q", "u"
	if cfg.Subjects[0] != "a" || cfg.Metadata["x"] != "1" || cfg.Mirror.External.APIPrefix != "p" || cfg.Placement.Tags[0] != "t" {
		t.Fatal("Clone shares memory")
	}

	a := StreamConfig{Name: "S", Metadata: map[string]string{"_nats.req.level": "0", "_nats.ver": "2.15.2"}}
	b := StreamConfig{Name: "S"}
	if !SameStreamConfig(&a, &b) {
		t.Fatal("server metadata compared")
	}
	b.Description = "d"
	if SameStreamConfig(&a, &b) {
		t.Fatal("difference not seen")
	}

	requireErrCode(t, (&StreamConfig{Name: "S", AllowMsgCounter: true}).CheckSupported(), nil)
	requireErrCode(t, (&StreamConfig{Name: "S", AllowBatchPublish: true}).CheckSupported(), ErrStreamInvalidConfig)
	requireErrCode(t, (&StreamConfig{Name: "S", AllowAtomicPublish: true}).CheckSupported(), nil)
	requireErrCode(t, (&StreamConfig{Name: "S", PersistMode: AsyncPersist}).CheckSupported(), nil)
	requireErrCode(t, (&StreamConfig{Name: "S", AllowMsgTTL: true}).CheckSupported(), nil)

	prev := StreamConfig{Name: "S", Mirror: &StreamSource{Name: "O"}}
	next := StreamConfig{Name: "S", Mirror: &StreamSource{Name: "O"}}
	requireErrCode(t, CheckStreamUpdate(&prev, &next), nil)
	next.Storage = MemoryStorage
	requireErrCode(t, CheckStreamUpdate(&prev, &next), ErrStreamInvalidConfig)
}

func TestStoreConfig(t *testing.T) {
	cfg := StreamConfig{Name: "S"}
	if err := cfg.Normalize(); err != nil {
		t.Fatal(err)
	}
	got := cfg.StoreConfig()
	if got != (store.Config{Name: "S"}) {
		t.Fatalf("defaults map to %+v", got)
	}
	cfg = StreamConfig{Name: "K", MaxMsgs: 10, MaxBytes: 20, MaxAge: time.Hour, MaxMsgsPerSubject: 3, MaxMsgSize: 99,
		Discard: DiscardNew, DiscardNewPerSubject: true, AllowMsgTTL: true}
	want := store.Config{Name: "K", MaxMsgs: 10, MaxBytes: 20, MaxAge: time.Hour, MaxMsgsPerSubject: 3, MaxMsgSize: 99,
		Discard: store.DiscardNew, DiscardNewPerSubject: true, AllowMsgTTL: true}
	if got := cfg.StoreConfig(); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestStoreError(t *testing.T) {
	tests := []struct {
		err  error
		want *APIError
	}{
		{store.ErrMaxMsgs, &APIError{503, 10077, "maximum messages exceeded"}},
		{store.ErrMaxBytes, &APIError{503, 10077, "maximum bytes exceeded"}},
		{fmt.Errorf("x: %w", store.ErrMaxMsgsPerSubject), &APIError{503, 10077, "maximum messages per subject exceeded"}},
		{store.ErrMaxMsgSize, NewMessageExceedsMaximumError()},
		{store.ErrStoreFull, NewInsufficientResourcesError()},
		{store.ErrNotFound, NewNoMessageFoundError()},
		{store.ErrDeleted, NewNoMessageFoundError()},
		{store.ErrClosed, &APIError{503, 10077, "store is closed"}},
		{errors.New("disk on fire"), &APIError{503, 10077, "disk on fire"}},
		{NewStreamSealedError(), NewStreamSealedError()},
		{nil, nil},
	}
	for _, tc := range tests {
		requireAPIError(t, StoreError(tc.err), tc.want)
	}
}

func TestConsumerNormalizeRules(t *testing.T) {
	stream := &StreamConfig{Name: "S", Subjects: []string{"s.>"}}
	if err := stream.Normalize(); err != nil {
		t.Fatal(err)
	}
	big := map[string]string{"k": strings.Repeat("v", MaxMetadataLen)}
	tests := []struct {
		name string
		cfg  ConsumerConfig
		opts Options
		want *APIError
		desc string
		then func(t *testing.T, c *ConsumerConfig)
	}{
		{name: "metadata too long", cfg: ConsumerConfig{AckPolicy: AckExplicit, Metadata: big},
			want: ErrConsumerMetadataLength, desc: "consumer metadata exceeds maximum size of 128KB"},
		{name: "durable with invalid name", cfg: ConsumerConfig{Durable: "a.b"}, want: ErrStreamInvalidConfig},
		{name: "durable and name differ", cfg: ConsumerConfig{Durable: "a", Name: "b"}, want: ErrConsumerCreateDurableAndNameMismatch},
		{name: "account max ack pending caps default", cfg: ConsumerConfig{AckPolicy: AckExplicit}, opts: Options{MaxAckPending: 10},
			then: func(t *testing.T, c *ConsumerConfig) {
				if c.MaxAckPending != 10 {
					t.Fatalf("max_ack_pending %d", c.MaxAckPending)
				}
			}},
		{name: "max ack pending over limit", cfg: ConsumerConfig{AckPolicy: AckExplicit, MaxAckPending: 20}, opts: Options{MaxAckPending: 10},
			want: ErrConsumerMaxPendingAckExcess, desc: "consumer max ack pending exceeds system limit of 10"},
		{name: "max request batch default", cfg: ConsumerConfig{AckPolicy: AckExplicit}, opts: Options{MaxRequestBatch: 50},
			then: func(t *testing.T, c *ConsumerConfig) {
				if c.MaxRequestBatch != 50 {
					t.Fatalf("max_batch %d", c.MaxRequestBatch)
				}
			}},
		{name: "max request batch over limit", cfg: ConsumerConfig{AckPolicy: AckExplicit, MaxRequestBatch: 60}, opts: Options{MaxRequestBatch: 50},
			want: ErrConsumerMaxRequestBatchExceeded, desc: "consumer max request batch exceeds server limit of 50"},
		{name: "durable keeps zero inactive threshold", cfg: ConsumerConfig{Durable: "d", AckPolicy: AckNone},
			then: func(t *testing.T, c *ConsumerConfig) {
				if c.InactiveThreshold != 0 || c.MaxAckPending != 0 || c.AckWait != 0 {
					t.Fatalf("got %+v", c)
				}
			}},
		{name: "ack all gets ack wait", cfg: ConsumerConfig{AckPolicy: AckAll},
			then: func(t *testing.T, c *ConsumerConfig) {
				if c.AckWait != DefaultAckWait || c.MaxAckPending != DefaultMaxAckPending || c.InactiveThreshold != DefaultInactiveThreshold {
					t.Fatalf("got %+v", c)
				}
			}},
		{name: "pinned gets default ttl", cfg: ConsumerConfig{AckPolicy: AckExplicit, PriorityPolicy: PriorityPinnedClient, PriorityGroups: []string{"g"}},
			then: func(t *testing.T, c *ConsumerConfig) {
				if c.PinnedTTL != DefaultPinnedTTL {
					t.Fatalf("priority_timeout %v", c.PinnedTTL)
				}
			}},
		{name: "empty group name", cfg: ConsumerConfig{AckPolicy: AckExplicit, PriorityPolicy: PriorityOverflow, PriorityGroups: []string{""}},
			want: ErrConsumerEmptyGroupName},
		{name: "direct pull", cfg: ConsumerConfig{Direct: true}, want: ErrConsumerDirectRequiresPush},
		{name: "direct durable", cfg: ConsumerConfig{Direct: true, Durable: "d", DeliverSubject: "x"}, want: ErrConsumerDirectRequiresEphemeral},
		{name: "ack fc needs fc", cfg: ConsumerConfig{AckPolicy: AckFlowControl, DeliverSubject: "x", MaxAckPending: 1}, opts: Options{Pedantic: true},
			want: ErrConsumerAckFCRequiresFC},
		{name: "ack fc needs max ack pending", cfg: ConsumerConfig{AckPolicy: AckFlowControl, DeliverSubject: "x", MaxAckPending: -1},
			want: ErrConsumerAckFCRequiresMaxAckPending},
		{name: "ack fc needs no ack wait", cfg: ConsumerConfig{AckPolicy: AckFlowControl, DeliverSubject: "x", MaxAckPending: 5, AckWait: time.Second},
			want: ErrConsumerAckFCRequiresNoAckWait},
		{name: "ack fc needs no max deliver", cfg: ConsumerConfig{AckPolicy: AckFlowControl, DeliverSubject: "x", MaxAckPending: 5, MaxDeliver: 3},
			want: ErrConsumerAckFCRequiresNoMaxDeliver},
		{name: "bad ack policy value", cfg: ConsumerConfig{AckPolicy: 9}, want: ErrConsumerAckPolicyInvalid},
		{name: "bad replay policy value", cfg: ConsumerConfig{ReplayPolicy: 9}, want: ErrConsumerReplayPolicyInvalid},
		{name: "negative sample", cfg: ConsumerConfig{SampleFrequency: "-5%"}, want: ErrConsumerInvalidSampling},
		{name: "deliver last with time", cfg: ConsumerConfig{DeliverPolicy: DeliverLast, OptStartTime: &time.Time{}},
			want: ErrConsumerInvalidPolicy, desc: "consumer delivery policy is deliver last, but optional start time is also set"},
		{name: "name of 256", cfg: ConsumerConfig{Name: strings.Repeat("n", 256)}, want: ErrConsumerNameTooLong},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cfg.Clone()
			err := tc.cfg.NormalizeWith(stream, tc.opts)
			requireErrCode(t, err, tc.want)
			if tc.desc != "" && err.Description != tc.desc {
				t.Fatalf("description %q, want %q", err.Description, tc.desc)
			}
			if err != nil && !reflect.DeepEqual(&tc.cfg, before) {
				t.Fatal("config changed by a failed Normalize")
			}
			if tc.then != nil {
				tc.then(t, &tc.cfg)
			}
		})
	}
}

func TestConsumerHelpers(t *testing.T) {
	c := ConsumerConfig{FilterSubjects: []string{"a"}, BackOff: []time.Duration{1}, Metadata: map[string]string{"k": "v"}}
	clone := c.Clone()
	clone.FilterSubjects[0], clone.BackOff[0], clone.Metadata["k"] = "b", 2, "w"
	if c.FilterSubjects[0] != "a" || c.BackOff[0] != 1 || c.Metadata["k"] != "v" {
		t.Fatal("Clone shares memory")
	}
	if got := (&ConsumerConfig{FilterSubject: "x"}).Filters(); len(got) != 1 || got[0] != "x" {
		t.Fatalf("Filters() = %v", got)
	}
	if (&ConsumerConfig{}).Filters() != nil || !(&ConsumerConfig{DeliverSubject: "d"}).IsPush() || !(&ConsumerConfig{Durable: "d"}).IsDurable() {
		t.Fatal("helpers")
	}

	until := time.Now()
	a := ConsumerConfig{Name: "c", PauseUntil: &until, Metadata: map[string]string{"_nats.level": "5"}}
	b := ConsumerConfig{Name: "c"}
	if !SameConsumerConfig(&a, &b) {
		t.Fatal("pause_until or server metadata compared")
	}

	requireErrCode(t, (&ConsumerConfig{AckPolicy: AckFlowControl}).CheckSupported(), ErrConsumerAckPolicyInvalid)
	requireErrCode(t, (&ConsumerConfig{PriorityPolicy: PriorityPinnedClient, PriorityGroups: []string{"g"}}).CheckSupported(), nil)
	requireErrCode(t, (&ConsumerConfig{Sourcing: true}).CheckSupported(), ErrConsumerCreate)
	requireErrCode(t, (&ConsumerConfig{AckPolicy: AckExplicit}).CheckSupported(), nil)
}

func TestCheckConsumerUpdate(t *testing.T) {
	base := ConsumerConfig{Durable: "d", AckPolicy: AckExplicit, DeliverSubject: "x", Heartbeat: time.Second, MaxDeliver: -1}
	start := time.Unix(100, 0)
	tests := []struct {
		name   string
		change func(c *ConsumerConfig)
		bound  bool
		want   *APIError
		desc   string
	}{
		{"identical", func(*ConsumerConfig) {}, false, nil, ""},
		{"mutable fields", func(c *ConsumerConfig) { c.Description, c.AckWait, c.MaxAckPending = "d", time.Minute, 5 }, false, nil, ""},
		{"start seq", func(c *ConsumerConfig) { c.OptStartSeq = 3 }, false, ErrConsumerCreate, "start sequence can not be updated"},
		{"start time", func(c *ConsumerConfig) { c.OptStartTime = &start }, false, ErrConsumerCreate, "start time can not be updated"},
		{"replay", func(c *ConsumerConfig) { c.ReplayPolicy = ReplayOriginal }, false, ErrConsumerCreate, "replay policy can not be updated"},
		{"flow control", func(c *ConsumerConfig) { c.FlowControl = true }, false, ErrConsumerCreate, "flow control can not be updated"},
		{"deliver subject while bound", func(c *ConsumerConfig) { c.DeliverSubject = "y" }, true, ErrConsumerNameExist, ""},
		{"max waiting", func(c *ConsumerConfig) { c.MaxWaiting = 3 }, false, ErrConsumerCreate, "max waiting can not be updated"},
		{"backoff over max deliver", func(c *ConsumerConfig) { c.BackOff, c.MaxDeliver = []time.Duration{1, 2}, 1 }, false, ErrConsumerMaxDeliverBackoff, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			next := base.Clone()
			tc.change(next)
			err := CheckConsumerUpdate(&base, next, tc.bound)
			requireErrCode(t, err, tc.want)
			if tc.desc != "" && err.Description != tc.desc {
				t.Fatalf("description %q", err.Description)
			}
		})
	}
	pull := ConsumerConfig{Durable: "d", AckPolicy: AckExplicit}
	push := pull
	push.DeliverSubject = "x"
	err := CheckConsumerUpdate(&pull, &push, false)
	if err == nil || err.Description != "can not update pull consumer to push based" {
		t.Fatalf("got %v", err)
	}
}

func TestCheckWorkQueueFilters(t *testing.T) {
	tests := []struct {
		name    string
		filters []string
		others  map[string][]string
		want    *APIError
	}{
		{"first consumer", nil, nil, nil},
		{"only itself", nil, map[string][]string{"me": nil}, nil},
		{"unfiltered second", nil, map[string][]string{"a": {"x"}}, ErrConsumerWQMultipleUnfiltered},
		{"disjoint", []string{"y.*"}, map[string][]string{"a": {"x.*"}}, nil},
		{"overlap by wildcard", []string{"x.b"}, map[string][]string{"a": {"x.*"}}, ErrConsumerWQConsumerNotUnique},
		{"partial overlap", []string{"x.*"}, map[string][]string{"a": {"*.y"}}, ErrConsumerWQConsumerNotUnique},
		{"other unfiltered", []string{"x"}, map[string][]string{"a": nil}, ErrConsumerWQConsumerNotUnique},
		{"self ignored", []string{"x"}, map[string][]string{"me": {"x"}, "a": {"y"}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireErrCode(t, CheckWorkQueueFilters("me", tc.filters, tc.others), tc.want)
		})
	}
}

func TestCheckConsumerCreate(t *testing.T) {
	tests := []struct {
		name    string
		subject string
		req     ConsumerCreateRequest
		want    *APIError
		target  ConsumerCreateTarget
		cfgName string
	}{
		{"new form", "$JS.API.CONSUMER.CREATE.S.c", ConsumerCreateRequest{Stream: "S"}, nil,
			ConsumerCreateTarget{Stream: "S", Consumer: "c"}, "c"},
		{"new form overrides config name", "$JS.API.CONSUMER.CREATE.S.c", ConsumerCreateRequest{Stream: "S", Config: ConsumerConfig{Name: "other"}}, nil,
			ConsumerCreateTarget{Stream: "S", Consumer: "c"}, "c"},
		{"filter with wildcards and $", "$JS.API.CONSUMER.CREATE.KV_b.abc.$KV.b.>",
			ConsumerCreateRequest{Stream: "KV_b", Config: ConsumerConfig{FilterSubject: "$KV.b.>"}}, nil,
			ConsumerCreateTarget{Stream: "KV_b", Consumer: "abc", Filter: "$KV.b.>"}, "abc"},
		{"legacy ephemeral", "$JS.API.CONSUMER.CREATE.S", ConsumerCreateRequest{Stream: "S"}, nil,
			ConsumerCreateTarget{Stream: "S", Legacy: true}, ""},
		{"legacy ephemeral named", "$JS.API.CONSUMER.CREATE.S", ConsumerCreateRequest{Stream: "S", Config: ConsumerConfig{Name: "n"}}, nil,
			ConsumerCreateTarget{Stream: "S", Consumer: "n", Legacy: true}, "n"},
		{"legacy durable", "$JS.API.CONSUMER.DURABLE.CREATE.S.d", ConsumerCreateRequest{Stream: "S", Config: ConsumerConfig{Durable: "d"}}, nil,
			ConsumerCreateTarget{Stream: "S", Consumer: "d", Legacy: true}, "d"},
		{"legacy durable mismatch", "$JS.API.CONSUMER.DURABLE.CREATE.S.d", ConsumerCreateRequest{Stream: "S", Config: ConsumerConfig{Durable: "e"}},
			ErrConsumerDurableNameNotMatchSubject, ConsumerCreateTarget{}, ""},
		{"legacy durable short", "$JS.API.CONSUMER.DURABLE.CREATE.S", ConsumerCreateRequest{Stream: "S"},
			ErrConsumerDurableNameNotInSubject, ConsumerCreateTarget{}, ""},
		{"not a consumer subject", "$JS.API.STREAM.CREATE.S", ConsumerCreateRequest{Stream: "S"}, ErrBadRequest, ConsumerCreateTarget{}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckConsumerCreate(tc.subject, &tc.req)
			requireErrCode(t, err, tc.want)
			if err != nil {
				return
			}
			if got != tc.target || tc.req.Config.Name != tc.cfgName {
				t.Fatalf("target %+v name %q, want %+v %q", got, tc.req.Config.Name, tc.target, tc.cfgName)
			}
		})
	}
}

func TestParseNextRequest(t *testing.T) {
	tests := []struct {
		body string
		want NextRequest
		err  string
	}{
		{"", NextRequest{Batch: 1}, ""},
		{"  ", NextRequest{Batch: 1}, ""},
		{"10", NextRequest{Batch: 10}, ""},
		{"junk", NextRequest{Batch: 1}, ""},
		{`{"batch":5,"no_wait":true}`, NextRequest{Batch: 5, NoWait: true}, ""},
		{`{"batch":5,"expires":10000000000,"idle_heartbeat":5000000000}`, NextRequest{Batch: 5, Expires: 10 * time.Second, Heartbeat: 5 * time.Second}, ""},
		{`{"batch":5,"expires":9000000000,"idle_heartbeat":5000000000}`, NextRequest{}, "heartbeat value too large"},
		{`{"batch":5,"idle_heartbeat":5000000000}`, NextRequest{}, "heartbeat value too large"},
		{`{"batch":`, NextRequest{}, "unexpected end of JSON input"},
		{`{"group":"g","min_pending":2,"id":"p","priority":3}`, NextRequest{PriorityGroup: PriorityGroup{Group: "g", MinPending: 2, ID: "p", Priority: 3}}, ""},
	}
	for _, tc := range tests {
		got, err := ParseNextRequest([]byte(tc.body))
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %q", tc.body, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %+v, %v; want %+v", tc.body, got, err, tc.want)
		}
	}
}

func TestParseTTL(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  bool
	}{
		{"never", -1, false}, {"NEVER", -1, false}, {"5s", 5, false}, {"1m", 60, false}, {"1500ms", 1, false},
		{"30", 30, false}, {"0", 0, true}, {"500ms", 0, true}, {"bogus", 0, true}, {"-5", 0, true}, {"+5", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseTTL(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseTTL(%q) = %d, %v", tc.in, got, err)
		}
		if err != nil {
			requireErrCode(t, err, ErrMessageTTLInvalid)
		}
	}
}

func TestPriorityGroupAllowed(t *testing.T) {
	overflow := &ConsumerConfig{PriorityPolicy: PriorityOverflow, PriorityGroups: []string{"g"}}
	none := &ConsumerConfig{}
	tests := []struct {
		cfg    *ConsumerConfig
		pg     PriorityGroup
		status string
	}{
		{overflow, PriorityGroup{Group: "g", MinPending: 1}, ""},
		{none, PriorityGroup{MinPending: 1}, "Bad Request - Not a Overflow Priority consumer"},
		{overflow, PriorityGroup{Group: "g", ID: "x"}, "Bad Request - Not a Pinned Client Priority consumer"},
		{overflow, PriorityGroup{Group: "g", Priority: 10}, "Bad Request - Priority must be between 0 and 9"},
		{overflow, PriorityGroup{}, "Bad Request - Priority Group missing"},
		{overflow, PriorityGroup{Group: "h"}, "Bad Request - Invalid Priority Group"},
		{none, PriorityGroup{}, ""},
	}
	for _, tc := range tests {
		ok, status := tc.cfg.PriorityGroupAllowed(&tc.pg)
		if ok != (tc.status == "") || status != tc.status {
			t.Errorf("%+v: %v %q, want %q", tc.pg, ok, status, tc.status)
		}
	}
}

func TestTransformChecks(t *testing.T) {
	tests := []struct {
		src, dest string
		want      string // "" for valid
	}{
		{"a.*", "b.{{wildcard(1)}}", ""},
		{"a.*", "b.$1", ""},
		{"a.*.*", "b.{{ Partition(3, 1, 2) }}", ""},
		{"a.*", "b.{{splitFromLeft(1, 2)}}", ""},
		{"a.*", "b.{{split(1,-)}}", ""},
		{"a", "b.{{random(5)}}", ""},
		{"", ">", ""},
		{"a.>", "b.>", ""},
		{"a.*", "", ""},
		{"a.>", "x", "invalid subject"},
		{"a", "b.*", "invalid subject"},
		{"a.*", "b.{{wildcard(2)}}", "invalid mapping destination: wildcard index out of range in {{wildcard(2)}}: [2]"},
		{"a", "b.{{wildcard(1)}}", "invalid mapping destination: wildcard index out of range in {{wildcard(1)}}"},
		{"a.*", "b.{{wildcard()}}", "invalid mapping destination: not enough arguments passed to the function in {{wildcard()}}"},
		{"a.*", "b.{{wildcard(1,2)}}", "invalid mapping destination: too many arguments passed to the function in {{wildcard(1,2)}}"},
		{"a.*", "b.{{left(x,2)}}", "invalid mapping destination: function argument is invalid or in the wrong format in {{left(x,2)}}"},
		{"a.*", "b.{{split(1,a b)}}", "invalid mapping destination: function argument is invalid or in the wrong format in {{split(1,a b)}}"},
		// Destinations are split into tokens first, so a '.' inside a
		// function call breaks it into literal tokens, as in nats-server.
		{"a.*", "b.{{split(1,.)}}", ""},
		{"a.*", "b.{{nope(1)}}", "invalid mapping destination: unknown function in {{nope(1)}}"},
		{"a.*", "b..c", "invalid mapping destination: invalid transform"},
		{"a.>", ">.b", "invalid mapping destination: invalid transform in b"},
	}
	for _, tc := range tests {
		err := validateMapping(tc.src, tc.dest)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if tc.want != got {
			t.Errorf("validateMapping(%q, %q) = %q, want %q", tc.src, tc.dest, got, tc.want)
		}
	}
}

func TestCheckUnpin(t *testing.T) {
	requireErrCode(t, (&ConsumerUnpinRequest{Group: "g"}).Check(), nil)
	err := (&ConsumerUnpinRequest{}).Check()
	requireErrCode(t, err, ErrInvalidJSON)
	if err.Description != "invalid JSON: consumer group not specified" {
		t.Fatalf("description %q", err.Description)
	}
	requireErrCode(t, (&ConsumerUnpinRequest{Group: "a.b"}).Check(), ErrConsumerInvalidGroupName)
	requireErrCode(t, (&ConsumerUnpinRequest{Group: "seventeen-chars-x"}).Check(), ErrConsumerInvalidGroupName)
	cfg := &ConsumerConfig{PriorityPolicy: PriorityPinnedClient, PriorityGroups: []string{"g"}}
	requireErrCode(t, cfg.CheckUnpin("g"), nil)
	requireErrCode(t, cfg.CheckUnpin("other"), ErrConsumerInvalidPriorityGroup)
	requireErrCode(t, (&ConsumerConfig{}).CheckUnpin("g"), ErrConsumerInvalidPriorityGroup)
}
