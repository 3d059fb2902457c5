package jetstream

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// directMaxBytes bounds a batch direct get when the request sets no
// max_bytes.
const directMaxBytes = 64 << 20

// noResponders is the status a client gets when nothing serves a subject.
// leafbox subscribes to all of $JS.API.>, so it answers with it itself
// where nats-server would have no subscription: direct gets on streams
// without allow_direct, and pulls from missing consumers.
var noResponders = []byte("NATS/1.0 503\r\n\r\n")

// apiDirectGet answers DIRECT.GET.<stream> (JSON body) and, with
// lastBySubject, DIRECT.GET.<stream>.<subject> (last message on subject).
// Answers are raw messages, not JSON.
func (e *Engine) apiDirectGet(name, last string, lastBySubject bool, reply string, data []byte) {
	send := func(hdr, body []byte) { e.bus.Publish(reply, "", hdr, body) }
	s := e.lookup(name)
	if s == nil || !s.config().AllowDirect {
		send(noResponders, nil)
		return
	}
	var req jsapi.MsgGetRequest
	if lastBySubject {
		if len(data) > 0 && json.Unmarshal(data, &req) != nil {
			send(statusHeader(408, jsapi.StatusMalformedRequest), nil)
			return
		}
		if last == "" || req.LastFor != "" || req.NextFor != "" || len(req.MultiLastFor) > 0 ||
			req.Seq != 0 || req.Batch != 0 || req.StartTime != nil || req.UpToSeq != 0 || req.UpToTime != nil {
			send(statusHeader(408, jsapi.StatusBadRequest), nil)
			return
		}
		req.LastFor = last
	} else {
		if len(data) == 0 {
			send(statusHeader(408, jsapi.StatusEmptyRequest), nil)
			return
		}
		if json.Unmarshal(data, &req) != nil {
			send(statusHeader(408, jsapi.StatusMalformedRequest), nil)
			return
		}
		if req.Seq == 0 && req.LastFor == "" && req.NextFor == "" && len(req.MultiLastFor) == 0 && req.StartTime == nil {
			send(statusHeader(408, jsapi.StatusEmptyRequest), nil)
			return
		}
		if !validMsgGet(&req) || len(req.MultiLastFor) > 0 {
			send(statusHeader(408, jsapi.StatusBadRequest), nil)
			return
		}
	}
	e.apiTotal.Add(1)
	if req.Batch > 0 {
		s.directBatch(&req, send)
		return
	}
	m, err := s.getMsg(&req)
	if err != nil {
		send(statusHeader(404, jsapi.StatusMessageNotFound), nil)
		return
	}
	var hdr []byte
	if !req.NoHeaders {
		hdr = directHeader(m.Header, s.name, m)
	}
	send(hdr, m.Data)
}

// directBatch answers a batch direct get: each message with
// Nats-Num-Pending and Nats-Last-Sequence, then a 204 EOB status.
func (s *stream) directBatch(req *jsapi.MsgGetRequest, send func(hdr, body []byte)) {
	seq := req.Seq
	if req.StartTime != nil {
		seq = s.seqFromTime(req.StartTime.UnixNano())
	}
	seq = max(seq, 1)
	filter := req.NextFor
	pending := s.store.FilteredState(filter, seq).Msgs
	maxBytes := req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = directMaxBytes
	}
	var lastSeq uint64
	sent := 0
	for i := 0; i < req.Batch; i++ {
		m, err := s.store.LoadNext(filter, seq, nil)
		if err != nil || req.UpToSeq > 0 && m.Seq > req.UpToSeq ||
			req.UpToTime != nil && m.Time > req.UpToTime.UnixNano() {
			if i == 0 {
				send(statusHeader(404, jsapi.StatusMessageNotFound), nil)
				return
			}
			break
		}
		seq = m.Seq + 1
		if pending > 0 {
			pending--
		}
		var hdr []byte
		if !req.NoHeaders {
			hdr = directHeader(m.Header, s.name, m)
			hdr = proto.AppendHeader(nil, hdr, jsapi.HeaderNumPending, strconv.FormatUint(pending, 10))
			hdr = proto.AppendHeader(nil, hdr, jsapi.HeaderLastSequence, strconv.FormatUint(lastSeq, 10))
		}
		lastSeq = m.Seq
		send(hdr, m.Data)
		if sent += len(m.Subject) + len(m.Header) + len(m.Data); sent >= maxBytes {
			break
		}
	}
	kv := []string{
		jsapi.HeaderNumPending, strconv.FormatUint(pending, 10),
		jsapi.HeaderLastSequence, strconv.FormatUint(lastSeq, 10),
	}
	if req.UpToSeq > 0 {
		kv = append(kv, jsapi.HeaderUpToSequence, strconv.FormatUint(req.UpToSeq, 10))
	}
	send(statusHeader(204, jsapi.StatusEOB, kv...), nil)
}

// directHeader returns a copy of the stored header plus Nats-Stream,
// Nats-Subject, Nats-Sequence and Nats-Time-Stamp. The fields are built on
// the stack (for common lengths): the block is one allocation.
func directHeader(stored []byte, stream string, m *store.Msg) []byte {
	var room [256]byte
	f := proto.AppendHeaderField(room[:0], jsapi.HeaderStream, stream)
	f = proto.AppendHeaderField(f, jsapi.HeaderSubject, m.Subject)
	f = append(f, jsapi.HeaderSequence+": "...)
	f = strconv.AppendUint(f, m.Seq, 10)
	f = append(f, "\r\n"+jsapi.HeaderTimeStamp+": "...)
	f = time.Unix(0, m.Time).UTC().AppendFormat(f, time.RFC3339Nano)
	f = append(f, "\r\n"...)
	return proto.AppendHeaderFields(nil, stored, f)
}
