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

// applyIncrLocked adds incr to subj's total (read from the subject's last
// message) and builds the message to store: hdr (with Nats-Incr and
// Nats-Counter-Sources rewritten for a sourced copy) and the new body.
// A last message whose body or Nats-Counter-Sources does not parse is
// 10172. Caller holds s.mu.
func (s *stream) applyIncrLocked(subj string, hdr, data []byte, incr *big.Int) (counted, *jsapi.APIError) {
	total := new(big.Int)
	var sources jsapi.CounterSources
	var sm store.Msg
	if last, err := s.store.LoadLast(subj, &sm); err == nil && last != nil {
		v, ok := jsapi.ParseCounterBody(last.Data)
		if !ok {
			return counted{}, jsapi.NewMessageCounterBrokenError()
		}
		total = v
		if cs := proto.HeaderValue(last.Header, jsapi.HeaderCounterSources); len(cs) > 0 {
			if json.Unmarshal(cs, &sources) != nil {
				return counted{}, jsapi.NewMessageCounterBrokenError()
			}
		}
	}
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
		if sources == nil {
			sources = jsapi.CounterSources{}
		}
		if sources[origin] == nil {
			sources[origin] = map[string]string{}
		}
		prev, ok := new(big.Int).SetString(sources[origin][originSubj], 10)
		if !ok {
			prev = new(big.Int)
		}
		sources[origin][originSubj] = theirs.String()
		incr = new(big.Int).Sub(theirs, prev)
		hdr = setHeader(hdr, jsapi.HeaderIncr, incr.String())
	}
	total.Add(total, incr)
	if len(sources) > 0 {
		b, err := json.Marshal(sources)
		if err != nil {
			return counted{}, jsapi.NewMessageCounterBrokenError()
		}
		hdr = setHeader(hdr, jsapi.HeaderCounterSources, string(b))
	}
	return counted{hdr: hdr, data: jsapi.AppendCounterBody(nil, total), val: total.String()}, nil
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
