package jetstream

import (
	"bytes"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Counter streams (allow_msg_counter) keep, per subject, a running total
// in the subject's last message: a publish carries Nats-Incr and an empty
// body, and the stream stores it with the body {"val":"<total>"} (the
// Nats-Incr header kept) and answers with the total in the PubAck's "val".
// The total is only ever read back from the last stored message, so it
// survives restarts and purges as the messages do.
//
// A message a source copies in carries the origin's own total, not an
// increment the stream could add: the stream remembers each origin
// subject's last total in the Nats-Counter-Sources header and adds the
// difference, rewriting Nats-Incr to it, as nats-server does.

// checkIncr reads and checks a publish's Nats-Incr header the way
// nats-server does before any other header check: a value that is not an
// integer is 10171 on any stream; on a stream that is not a counter
// stream it is 10168; a counter increment must come with an empty body
// (10170) and without rollup or expectation headers (10171). Copies from
// a source skip the last three checks. It returns nil when hdr has no
// increment; ordinary publishes pay one header lookup.
func checkIncr(cfg *jsapi.StreamConfig, hdr []byte, bodyLen int, sourced bool) (*big.Int, *jsapi.APIError) {
	v := proto.HeaderValue(hdr, jsapi.HeaderIncr)
	if len(v) == 0 {
		return nil, nil
	}
	incr, ok := jsapi.ParseIncr(v)
	if !ok {
		return nil, jsapi.NewMessageIncrInvalidError()
	}
	if sourced {
		return incr, nil
	}
	switch {
	case !cfg.AllowMsgCounter:
		return nil, jsapi.NewMessageIncrDisabledError()
	case bodyLen > 0:
		return nil, jsapi.NewMessageIncrPayloadError()
	}
	for _, h := range [...]string{jsapi.HeaderRollup, jsapi.HeaderExpectedStream, jsapi.HeaderExpectedLastMsgID,
		jsapi.HeaderExpectedLastSubjSeqSubj, jsapi.HeaderExpectedLastSeq, jsapi.HeaderExpectedLastSubjSeq} {
		if len(proto.HeaderValue(hdr, h)) > 0 {
			return nil, jsapi.NewMessageIncrInvalidError()
		}
	}
	return incr, nil
}

// counted is a counter message ready to store.
type counted struct {
	hdr, data []byte
	val       string
}

// counterTotal is a subject's counter: its total and, on a stream that
// sources counters, each origin subject's last total.
type counterTotal struct {
	val     *big.Int
	sources jsapi.CounterSources
}

// countLocked turns a publish on a counter stream into the message to
// store: a missing Nats-Incr is 10169; otherwise incr is added to subj's
// total and the result checked against the stream's size limits. The
// total starts from the subject's last stored message; staged, when not
// nil, holds the running totals of an atomic batch being committed (read
// and updated, so that increments to one subject within the batch add
// up). Caller holds s.mu.
func (s *stream) countLocked(staged map[string]*counterTotal, subj string, hdr, data []byte, incr *big.Int) (counted, *jsapi.APIError) {
	if incr == nil {
		return counted{}, jsapi.NewMessageIncrMissingError()
	}
	var ct *counterTotal
	if staged != nil {
		ct = staged[subj]
	}
	if ct == nil {
		loaded, apiErr := s.loadCounterLocked(subj)
		if apiErr != nil {
			return counted{}, apiErr
		}
		ct = &loaded
		if staged != nil {
			staged[subj] = ct
		}
	}
	ctr, apiErr := applyIncr(ct, subj, hdr, data, incr)
	if apiErr != nil {
		return counted{}, apiErr
	}
	if cfg := &s.cfg; cfg.MaxMsgSize > 0 && len(ctr.hdr)+len(ctr.data) > int(cfg.MaxMsgSize) {
		return counted{}, jsapi.NewMessageExceedsMaximumError()
	}
	if len(ctr.hdr) > 1<<16-1 {
		return counted{}, jsapi.NewStreamHeaderExceedsMaximumError()
	}
	return ctr, nil
}

// loadCounterLocked reads subj's counter from the subject's last
// message (zero when there is none). A last message whose body or
// Nats-Counter-Sources does not parse is 10172. Caller holds s.mu.
func (s *stream) loadCounterLocked(subj string) (counterTotal, *jsapi.APIError) {
	ct := counterTotal{val: new(big.Int)}
	var sm store.Msg
	if last, err := s.store.LoadLast(subj, &sm); err == nil && last != nil {
		v, ok := jsapi.ParseCounterBody(last.Data)
		if !ok {
			return counterTotal{}, jsapi.NewMessageCounterBrokenError()
		}
		ct.val = v
		if cs := proto.HeaderValue(last.Header, jsapi.HeaderCounterSources); len(cs) > 0 {
			if json.Unmarshal(cs, &ct.sources) != nil {
				return counterTotal{}, jsapi.NewMessageCounterBrokenError()
			}
		}
	}
	return ct, nil
}

// applyIncr adds incr to ct (updated in place) and builds the message to
// store: hdr (with Nats-Incr and Nats-Counter-Sources rewritten for a
// sourced copy) and the new body.
func applyIncr(ct *counterTotal, subj string, hdr, data []byte, incr *big.Int) (counted, *jsapi.APIError) {
	if src := proto.HeaderValue(hdr, jsapi.HeaderStreamSource); len(src) > 0 {
		// A copy from a source: its body is the origin's total.
		fields := strings.Split(string(src), " ")
		origin, originSubj := fields[0], subj
		if len(fields) >= 5 {
			originSubj = fields[4]
		}
		theirs, ok := jsapi.ParseCounterBody(data)
		if !ok {
			return counted{}, jsapi.NewMessageCounterBrokenError()
		}
		if ct.sources == nil {
			ct.sources = jsapi.CounterSources{}
		}
		if ct.sources[origin] == nil {
			ct.sources[origin] = map[string]string{}
		}
		prev, ok := new(big.Int).SetString(ct.sources[origin][originSubj], 10)
		if !ok {
			prev = new(big.Int)
		}
		ct.sources[origin][originSubj] = theirs.String()
		incr = new(big.Int).Sub(theirs, prev)
		hdr = setHeader(hdr, jsapi.HeaderIncr, incr.String())
	}
	ct.val.Add(ct.val, incr)
	if len(ct.sources) > 0 {
		b, err := json.Marshal(ct.sources)
		if err != nil {
			return counted{}, jsapi.NewMessageCounterBrokenError()
		}
		hdr = setHeader(hdr, jsapi.HeaderCounterSources, string(b))
	}
	return counted{hdr: hdr, data: jsapi.AppendCounterBody(nil, ct.val), val: ct.val.String()}, nil
}

// setHeader returns hdr with the first field named key set to value,
// in place in the field order, or added at the end when there is none.
// The result is a new slice; hdr is only read.
func setHeader(hdr []byte, key, value string) []byte {
	if i := bytes.Index(hdr, []byte("\r\n"+key+":")); i >= 0 {
		start := i + 2 + len(key) + 1
		for start < len(hdr) && hdr[start] == ' ' {
			start++
		}
		end := bytes.Index(hdr[start:], []byte("\r\n"))
		if end < 0 {
			return hdr
		}
		end += start
		out := make([]byte, 0, len(hdr)-(end-start)+len(value))
		out = append(out, hdr[:start]...)
		out = append(out, value...)
		return append(out, hdr[end:]...)
	}
	return proto.AppendHeader(nil, hdr, key, value)
}

// appendAckVal appends a counter's total to a PubAck whose closing brace
// the caller cut off, and closes it again.
func appendAckVal(dst []byte, val string) []byte {
	dst = append(dst, `,"val":`...)
	dst = strconv.AppendQuote(dst, val)
	return append(dst, '}')
}
