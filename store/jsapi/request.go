package jsapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// DecodeRequest decodes a JSON request body into v as nats-server does in
// its default strict mode: unknown fields are refused, several JSON values
// are decoded in turn, and syntax errors carry their offset. An empty body
// leaves v unchanged. Failures are 400/10025 "invalid JSON: …".
func DecodeRequest(body []byte, v any) *APIError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	for {
		err := dec.Decode(v)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			var syntaxErr *json.SyntaxError
			if errors.As(err, &syntaxErr) {
				err = fmt.Errorf("%w at offset %d", err, syntaxErr.Offset)
			}
			return NewInvalidJSONError(err)
		}
	}
}

// IsEmptyRequest reports whether body counts as empty for requests that
// take none (otherwise 400/10038): no bytes, or an empty JSON object.
func IsEmptyRequest(body []byte) bool {
	if len(body) == 0 || bytes.Equal(body, []byte("{}")) {
		return true
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return false
	}
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

// ParseTTL parses a Nats-TTL header value as nats-server does: "never"
// (any case) returns -1; a Go duration of at least 1s returns whole
// seconds; a non-negative integer is seconds. Anything else is 400/10165.
// A zero result means no TTL.
func ParseTTL(v string) (int64, *APIError) {
	if strings.EqualFold(v, "never") {
		return -1, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < time.Second {
			return 0, NewMessageTTLInvalidError()
		}
		return int64(d.Seconds()), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || !allDigits(v) {
		return 0, NewMessageTTLInvalidError()
	}
	return n, nil
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// ConsumerCreateTarget is what a consumer create subject addresses.
type ConsumerCreateTarget struct {
	// Stream is the stream's name.
	Stream string
	// Consumer is the consumer's name; empty for a legacy ephemeral
	// without config.name, for which the engine picks a name.
	Consumer string
	// Filter is the filter subject carried by the subject, if any.
	Filter string
	// Legacy is true for CONSUMER.CREATE.<stream> and
	// CONSUMER.DURABLE.CREATE.<stream>.<durable>.
	Legacy bool
}

// CheckConsumerCreate applies the checks nats-server makes on a consumer
// create request before looking up the stream. subj is the request
// subject with any domain prefix mapped to $JS.API; it is one of
//
//	$JS.API.CONSUMER.CREATE.<stream>                    legacy ephemeral
//	$JS.API.CONSUMER.DURABLE.CREATE.<stream>.<durable>  legacy durable
//	$JS.API.CONSUMER.CREATE.<stream>.<name>[.<filter…>]
//
// It sets req.Config.Name to the subject's consumer name where nats-server
// does, and refuses: a body stream_name differing from the subject's
// (10056), path separators in the name (10127), a missing or different
// durable name on the legacy durable form (10018, 10017), a durable name
// differing from the subject's name (10017), a durable name on the legacy
// ephemeral form (10020), a subject filter together with filter_subjects
// (10137) or differing from filter_subject (10131), and num_replicas > 1
// (10074).
func CheckConsumerCreate(subj string, req *ConsumerCreateRequest) (ConsumerCreateTarget, *APIError) {
	var t ConsumerCreateTarget
	toks := strings.Split(subj, ".")
	switch {
	case len(toks) < 5 || toks[0] != "$JS" || toks[1] != "API" || toks[2] != "CONSUMER":
		return t, NewBadRequestError()
	case len(toks) == 5:
		t.Legacy = true
		t.Stream, t.Consumer = toks[4], req.Config.Name
	case toks[3] == "DURABLE":
		if len(toks) != 7 {
			return t, NewConsumerDurableNameNotInSubjectError()
		}
		t.Legacy = true
		t.Stream, t.Consumer = toks[5], toks[6]
	default:
		t.Stream, t.Consumer = toks[4], toks[5]
		if len(toks) > 6 {
			t.Filter = strings.Join(toks[6:], ".")
		}
	}
	if t.Stream != req.Stream {
		return t, NewStreamMismatchError()
	}
	if t.Consumer != "" && containsPathSeparator(t.Consumer) {
		return t, NewConsumerNameContainsPathSeparatorsError()
	}
	cfg := &req.Config
	switch {
	case t.Legacy && len(toks) == 7:
		if cfg.Durable == "" {
			return t, NewConsumerDurableNameNotSetError()
		}
		if t.Consumer != cfg.Durable {
			return t, NewConsumerDurableNameNotMatchSubjectError()
		}
		cfg.Name = t.Consumer
	case !t.Legacy:
		if cfg.Durable != "" && t.Consumer != cfg.Durable {
			return t, NewConsumerDurableNameNotMatchSubjectError()
		}
		cfg.Name = t.Consumer
	case cfg.Durable != "":
		return t, NewConsumerEphemeralWithDurableNameError()
	}
	if t.Filter != "" && len(cfg.FilterSubjects) != 0 {
		return t, NewConsumerMultipleFiltersNotAllowedError()
	}
	if t.Filter != "" && cfg.FilterSubject != t.Filter {
		return t, NewConsumerCreateFilterSubjectMismatchError()
	}
	if cfg.Replicas > 1 {
		return t, NewReplicasNotSupportedError()
	}
	return t, nil
}

// ParseNextRequest decodes the body of a CONSUMER.MSG.NEXT request as
// nats-server does: an empty body is batch 1; a JSON object is a
// NextRequest; a bare integer is that batch; anything else is batch 1. A
// heartbeat with idle_heartbeat*2 > expires is refused with "heartbeat
// value too large". The engine answers errors with
// "NATS/1.0 400 Bad Request - <error text>".
func ParseNextRequest(body []byte) (NextRequest, error) {
	body = bytes.TrimSpace(body)
	switch {
	case len(body) == 0:
		return NextRequest{Batch: 1}, nil
	case body[0] == '{':
		var r NextRequest
		if err := json.Unmarshal(body, &r); err != nil {
			return NextRequest{}, err
		}
		if r.Heartbeat > 0 && r.Heartbeat*2 > r.Expires {
			return NextRequest{}, errors.New("heartbeat value too large")
		}
		return r, nil
	}
	if n, err := strconv.Atoi(string(body)); err == nil {
		return NextRequest{Batch: n}, nil
	}
	return NextRequest{Batch: 1}, nil
}
