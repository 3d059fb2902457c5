package jetstream

import (
	"encoding/json"
	"slices"
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
	e.directGet(name, last, lastBySubject, data, func(hdr, body []byte) { e.bus.Publish(reply, "", hdr, body) })
}

// directGet computes the answers of a direct get and hands each to send,
// in order.
func (e *Engine) directGet(name, last string, lastBySubject bool, data []byte, send func(hdr, body []byte)) {
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
		if !validMsgGet(&req) {
			send(statusHeader(408, jsapi.StatusBadRequest), nil)
			return
		}
	}
	e.apiTotal.Add(1)
	if len(req.MultiLastFor) > 0 {
		s.directMultiLast(&req, send)
		return
	}
	if req.Batch != 0 {
		// A negative batch is a batch of none, answered by its EOB, as
		// in nats-server.
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
// Nats-Num-Pending (messages after it matching the request) and
// Nats-Last-Sequence (the previous answer's sequence, 0 on the first),
// then a 204 EOB with both. As in nats-server, up_to_seq and up_to_time
// apply to multi_last only, and with no_hdr the EOB's count is the one
// taken at the start unless the stream grew meanwhile.
func (s *stream) directBatch(req *jsapi.MsgGetRequest, send func(hdr, body []byte)) {
	seq := req.Seq
	if req.StartTime != nil {
		seq = s.seqFromTime(req.StartTime.UnixNano())
	}
	seq = max(seq, 1)
	filter := req.NextFor
	lastAtStart := s.store.State().LastSeq
	pending := s.store.FilteredState(filter, seq).Msgs
	maxBytes := req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = directMaxBytes
	}
	var lastSeq uint64
	sent := 0
	for i := 0; i < req.Batch; i++ {
		m, err := s.store.LoadNext(filter, seq, nil)
		if err != nil {
			if i == 0 {
				send(statusHeader(404, jsapi.StatusMessageNotFound), nil)
				return
			}
			break
		}
		seq = m.Seq + 1
		var hdr []byte
		if !req.NoHeaders {
			if pending > 0 {
				pending--
			}
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
	if s.store.State().LastSeq > lastAtStart {
		pending = s.store.FilteredState(filter, seq).Msgs
	}
	send(statusHeader(204, jsapi.StatusEOB,
		jsapi.HeaderNumPending, strconv.FormatUint(pending, 10),
		jsapi.HeaderLastSequence, strconv.FormatUint(lastSeq, 10)), nil)
}

// directMultiMax is how many subjects a multi_last request may match, as
// in nats-server; above it the answer is 413 Too Many Results.
const directMultiMax = 1024

// Statuses of a multi_last direct get that selects nothing or too much.
const (
	statusNoResults      = "No Results"
	statusTooManyResults = "Too Many Results"
)

// directMultiLast answers a multi_last direct get: the last message at or
// below the request's upper bound (up_to_seq, or the message before
// up_to_time, else the stream's last) of every subject matching one of
// the filters, in stream order, each with Nats-Num-Pending (answers still
// to come) and Nats-Last-Sequence (the previous answer's sequence), then
// a 204 EOB carrying Nats-UpTo-Sequence. Subjects whose message is below
// seq are counted but not sent; batch and max_bytes cut the answers
// short.
func (s *stream) directMultiLast(req *jsapi.MsgGetRequest, send func(hdr, body []byte)) {
	upTo := req.UpToSeq
	if req.UpToTime != nil {
		upTo = s.seqFromTime(req.UpToTime.UnixNano())
		if upTo <= s.store.State().FirstSeq {
			send(statusHeader(404, statusNoResults), nil)
			return
		}
		upTo--
	}
	if upTo == 0 {
		upTo = s.store.State().LastSeq
	}
	seqs, ok := s.multiLastSeqs(req.MultiLastFor, upTo)
	if !ok {
		send(statusHeader(413, statusTooManyResults), nil)
		return
	}
	if len(seqs) == 0 {
		send(statusHeader(404, statusNoResults), nil)
		return
	}
	maxBytes := req.MaxBytes
	if maxBytes <= 0 {
		maxBytes = directMaxBytes
	}
	pending := uint64(len(seqs))
	var lastSeq uint64
	var sentBytes, sent int
	for _, seq := range seqs {
		pending--
		if seq < req.Seq {
			continue
		}
		m, err := s.store.Load(seq, nil)
		if err != nil {
			send(statusHeader(404, jsapi.StatusMessageNotFound), nil)
			return
		}
		hdr := directHeader(m.Header, s.name, m)
		hdr = proto.AppendHeader(nil, hdr, jsapi.HeaderNumPending, strconv.FormatUint(pending, 10))
		hdr = proto.AppendHeader(nil, hdr, jsapi.HeaderLastSequence, strconv.FormatUint(lastSeq, 10))
		lastSeq = m.Seq
		send(hdr, m.Data)
		if sentBytes += len(m.Subject) + len(m.Header) + len(m.Data); sentBytes >= maxBytes {
			break
		}
		if sent++; req.Batch > 0 && sent >= req.Batch {
			break
		}
	}
	send(statusHeader(204, jsapi.StatusEOB,
		jsapi.HeaderNumPending, strconv.FormatUint(pending, 10),
		jsapi.HeaderLastSequence, strconv.FormatUint(lastSeq, 10),
		jsapi.HeaderUpToSequence, strconv.FormatUint(upTo, 10)), nil)
}

// multiLastSeqs returns, sorted, the sequence of the last message at or
// below upTo of each subject matching one of filters; false when they
// match more than directMultiMax subjects.
func (s *stream) multiLastSeqs(filters []string, upTo uint64) ([]uint64, bool) {
	seen := map[uint64]bool{}
	var seqs []uint64
	var sm store.Msg
	for _, filter := range filters {
		for subj, n := range s.store.SubjectsState(filter) {
			m, err := s.store.LoadLast(subj, &sm)
			if err != nil {
				continue
			}
			seq := m.Seq
			if seq > upTo {
				// The subject's last is past the bound: walk its
				// messages for the last one within it.
				seq = 0
				for next := uint64(1); n > 1; {
					m, err := s.store.LoadNext(subj, next, &sm)
					if err != nil || m.Seq > upTo {
						break
					}
					seq, next = m.Seq, m.Seq+1
				}
			}
			if seq != 0 && !seen[seq] {
				seen[seq] = true
				seqs = append(seqs, seq)
			}
		}
		if len(seqs) > directMultiMax {
			return nil, false
		}
	}
	slices.Sort(seqs)
	return seqs, true
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
