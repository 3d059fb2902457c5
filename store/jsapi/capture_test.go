package jsapi

import (
	"encoding/json"
	"strings"
	"testing"
)

// engineErrors are err_codes that need state the validation layer does not
// have (other streams, existing consumers); the capture replay below
// checks them through the helpers the engine uses instead.
var engineErrors = map[uint16]bool{
	ErrStreamNameExist.ErrCode:      true, // identical-config comparison
	ErrStreamSubjectOverlap.ErrCode: true, // other streams' subjects
	ErrStreamNotFound.ErrCode:       true,
}

// replay walks the captured cases in order, keeping the normalized stream
// and consumer configurations nats-server reported, so that each request
// is checked against the state nats-server had.
type replay struct {
	streams   map[string]*StreamConfig
	consumers map[string]map[string]*ConsumerConfig
}

func newReplay() *replay {
	return &replay{streams: map[string]*StreamConfig{}, consumers: map[string]map[string]*ConsumerConfig{}}
}

// config extracts and decodes the "config" member of a response.
func responseConfig(t *testing.T, resp json.RawMessage, v any) json.RawMessage {
	t.Helper()
	var r struct {
		Config json.RawMessage `json:"config"`
	}
	mustUnmarshal(t, resp, &r)
	cfg := dropServerMetadata(t, r.Config)
	mustUnmarshal(t, cfg, v)
	return cfg
}

// TestCapturedStreamValidation replays every captured STREAM.CREATE and
// STREAM.UPDATE through CheckStreamCreate, Normalize and
// CheckStreamUpdate: the normalized config must equal nats-server's echo
// (server metadata aside) and every validation error must match
// nats-server's code, err_code and description exactly.
func TestCapturedStreamValidation(t *testing.T) {
	for _, f := range captureFiles {
		r := newReplay()
		for _, c := range loadCaptureFile(t, f) {
			create := strings.HasPrefix(c.Subject, "$JS.API.STREAM.CREATE.")
			update := strings.HasPrefix(c.Subject, "$JS.API.STREAM.UPDATE.")
			if !create && !update {
				continue
			}
			t.Run(c.Name, func(t *testing.T) {
				r.stream(t, &c, create)
			})
		}
	}
}

func (r *replay) stream(t *testing.T, c *captureCase, create bool) {
	name := c.Subject[strings.LastIndexByte(c.Subject, '.')+1:]
	want := c.apiError(t)

	var req StreamCreateRequest
	err := DecodeRequest(c.body(t), &req)
	if err == nil && create {
		err = CheckStreamCreate(name, &req.StreamConfig)
	}
	if err == nil && !create && name != req.Name {
		err = NewStreamMismatchError()
	}
	if err == nil {
		err = req.NormalizeWith(Options{Pedantic: req.Pedantic})
	}
	prev := r.streams[name]
	if err == nil && !create && prev == nil {
		err = NewStreamNotFoundError()
	}
	if err == nil && !create {
		err = CheckStreamUpdate(prev, &req.StreamConfig)
	}
	if err == nil && create && prev != nil && !SameStreamConfig(prev, &req.StreamConfig) {
		err = NewStreamNameExistError()
	}
	if err == nil && create && prev == nil {
		for other, ocfg := range r.streams {
			for _, a := range ocfg.Subjects {
				for _, b := range req.Subjects {
					if other != name && subjectOverlap(a, b) {
						err = NewStreamSubjectOverlapError()
					}
				}
			}
		}
	}
	if want != nil {
		if engineErrors[want.ErrCode] {
			requireErrCode(t, err, want)
		}
		requireAPIError(t, err, want)
		return
	}
	if err != nil {
		t.Fatalf("nats-server accepted it; we refused: %v", err)
	}
	var echoed StreamConfig
	wantJSON := responseConfig(t, c.Response, &echoed)
	requireSameJSON(t, mustMarshal(t, &req.StreamConfig), wantJSON)
	r.streams[name] = &echoed
}

// TestCapturedConsumerValidation replays every captured consumer create
// through the steps the engine takes: CheckConsumerCreate, the stream
// lookup, Normalize against the stream, then the action, update and
// workqueue rules. Configs must equal nats-server's echo and errors must
// match exactly.
func TestCapturedConsumerValidation(t *testing.T) {
	for _, f := range captureFiles {
		r := newReplay()
		for _, c := range loadCaptureFile(t, f) {
			r.consumerStep(t, &c)
		}
	}
}

// consumerStep applies one captured case to the replay state, checking
// consumer creates.
func (r *replay) consumerStep(t *testing.T, c *captureCase) {
	{
		switch {
		case strings.HasPrefix(c.Subject, "$JS.API.STREAM.CREATE."), strings.HasPrefix(c.Subject, "$JS.API.STREAM.UPDATE."):
			if c.apiError(t) == nil {
				var cfg StreamConfig
				responseConfig(t, c.Response, &cfg)
				r.streams[cfg.Name] = &cfg
			}
		case strings.HasPrefix(c.Subject, "$JS.API.CONSUMER.DELETE."):
			toks := strings.Split(c.Subject, ".")
			delete(r.consumers[toks[4]], toks[5])
		case strings.HasPrefix(c.Subject, "$JS.API.CONSUMER.CREATE."), strings.HasPrefix(c.Subject, "$JS.API.CONSUMER.DURABLE.CREATE."):
			t.Run(c.Name, func(t *testing.T) { r.consumer(t, c) })
		}
	}
}

func (r *replay) consumer(t *testing.T, c *captureCase) {
	want := c.apiError(t)
	var req ConsumerCreateRequest
	err := DecodeRequest(c.body(t), &req)
	var target ConsumerCreateTarget
	if err == nil {
		target, err = CheckConsumerCreate(c.Subject, &req)
	}
	stream := r.streams[target.Stream]
	if err == nil && stream == nil {
		err = NewStreamNotFoundError()
	}
	if err == nil {
		err = req.Config.NormalizeWith(stream, Options{Pedantic: req.Pedantic})
	}
	existing := r.consumers[target.Stream][target.Consumer]
	if err == nil {
		switch {
		case existing != nil && req.Action == ActionCreate && !SameConsumerConfig(existing, &req.Config):
			err = NewConsumerAlreadyExistsError()
		case existing == nil && req.Action == ActionUpdate:
			err = NewConsumerDoesNotExistError()
		case existing != nil:
			err = CheckConsumerUpdate(existing, &req.Config, false)
		case stream.Retention == WorkQueuePolicy:
			others := map[string][]string{}
			for n, o := range r.consumers[target.Stream] {
				others[n] = o.Filters()
			}
			err = CheckWorkQueueFilters(target.Consumer, req.Config.Filters(), others)
		}
	}
	if want != nil {
		requireAPIError(t, err, want)
		return
	}
	if err != nil {
		t.Fatalf("nats-server accepted it; we refused: %v", err)
	}
	var echoed ConsumerConfig
	wantJSON := responseConfig(t, c.Response, &echoed)
	requireSameJSON(t, mustMarshal(t, &req.Config), wantJSON)

	var info struct {
		Name string `json:"name"`
	}
	mustUnmarshal(t, c.Response, &info)
	if target.Consumer != "" && info.Name != target.Consumer {
		t.Fatalf("server named it %q, subject said %q", info.Name, target.Consumer)
	}
	if r.consumers[target.Stream] == nil {
		r.consumers[target.Stream] = map[string]*ConsumerConfig{}
	}
	r.consumers[target.Stream][info.Name] = &echoed
}
