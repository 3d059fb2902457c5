package jetstream

import (
	"bytes"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store/jsapi"
)

// This file applies a stream's subject_transform at ingest and its
// republish after each store, as nats-server does: the transform rewrites
// the subject a matching message is stored under (a subject it does not
// match is stored unchanged); republish publishes each stored message
// whose (stored) subject matches its source to its destination, with the
// Nats-Stream, Nats-Subject, Nats-Sequence, Nats-Time-Stamp and
// Nats-Last-Sequence headers appended to the message's own, and with
// headers_only the headers plus Nats-Msg-Size and no body.

// streamTransforms is a stream's compiled subject_transform and republish.
// The fields are guarded by the stream's mu.
type streamTransforms struct {
	in          *jsapi.Transform // subject_transform; nil for none
	rp          *jsapi.Transform // republish; nil for none
	headersOnly bool
	buf         []byte        // scratch for transformed subjects
	rpNames     subject.Names // republish destinations, as strings
	// cycleMark is "\r\nNats-Stream: <name>\r\n": a message that carries
	// it was republished by this stream already (see republishSubject).
	cycleMark []byte
	// rpBuf caches one republish header buffer; taken and put back
	// without s.mu (nil while a republish uses it).
	rpBuf atomic.Pointer[[]byte]
}

// set compiles cfg's transforms. The configuration was checked, so an
// error here is a bug surfaced to the caller.
func (x *streamTransforms) set(cfg *jsapi.StreamConfig) error {
	x.in, x.rp, x.headersOnly = nil, nil, false
	x.cycleMark = []byte("\r\n" + jsapi.HeaderStream + ": " + cfg.Name + "\r\n")
	if t := cfg.SubjectTransform; t != nil {
		tr, err := jsapi.CompileTransform(t.Source, t.Destination)
		if err != nil {
			return err
		}
		x.in = tr
	}
	if rp := cfg.RePublish; rp != nil {
		dest := rp.Destination
		if dest == "" {
			dest = ">"
		}
		tr, err := jsapi.CompileTransform(rp.Source, dest)
		if err != nil {
			return err
		}
		x.rp, x.headersOnly = tr, rp.HeadersOnly
	}
	return nil
}

// ingest returns the subject a message published on subj is stored
// under, a remembered string from names so that a repeated subject
// allocates nothing. A transform whose result is not a valid subject
// (split() can leave an empty token) refuses the message with 10156:
// nats-server stores it under that subject, which no filter can select.
func (x *streamTransforms) ingest(names *subject.Names, subj string) (string, *jsapi.APIError) {
	if x.in == nil {
		return subj, nil
	}
	b, ok := x.in.Append(x.buf[:0], subj)
	x.buf = b[:0]
	if !ok {
		return subj, nil
	}
	if !subject.ValidLiteralBytes(b) {
		return "", jsapi.NewStreamTransformInvalidDestinationError(fmt.Errorf("subject %q maps to %q, not a valid subject", subj, b))
	}
	return names.Name(b), nil
}

// republishSubject returns the destination a message stored under subj
// with the headers hdr is republished to, "" for none (no republish, no
// match, or a destination that is not a valid publish subject).
//
// Unlike nats-server, a message this stream republished before is not
// republished again: the broker delivers a republish on the publishing
// goroutine, so a cycle through other streams (A republishes into B,
// B into A) would recurse without end instead of looping through a queue.
func (x *streamTransforms) republishSubject(subj string, hdr []byte) string {
	if x.rp == nil || (len(hdr) > 0 && bytes.Contains(hdr, x.cycleMark)) {
		return ""
	}
	b, ok := x.rp.Append(x.buf[:0], subj)
	x.buf = b[:0]
	if !ok || !subject.ValidLiteralBytes(b) {
		return ""
	}
	return x.rpNames.Name(b)
}

// republishing is what the stream's mu-guarded store step hands to the
// republish that follows it, outside the lock.
type republishing struct {
	dest        string // "" for none
	subj        string // the stored subject
	seq, last   uint64 // last: the subject's previous sequence, 0 if none
	ts          int64
	headersOnly bool
}

// republish publishes the stored message (hdr, data as published) to its
// republish destination. It runs after the stream's mu is released: the
// destination may be another stream's subject.
func (s *stream) republish(rp *republishing, hdr, data []byte) {
	bp := s.xf.rpBuf.Swap(nil)
	if bp == nil {
		bp = new([]byte) // a concurrent republish holds the cached one
	}
	h := (*bp)[:0]
	if len(hdr) >= 4 {
		h = append(h, hdr[:len(hdr)-2]...) // keep the status line and headers, drop the final CRLF
	} else {
		h = append(h, "NATS/1.0\r\n"...)
	}
	h = appendHeader(h, jsapi.HeaderStream, s.name)
	h = appendHeader(h, jsapi.HeaderSubject, rp.subj)
	h = append(h, jsapi.HeaderSequence+": "...)
	h = strconv.AppendUint(h, rp.seq, 10)
	h = append(h, "\r\n"+jsapi.HeaderTimeStamp+": "...)
	h = time.Unix(0, rp.ts).UTC().AppendFormat(h, time.RFC3339Nano)
	h = append(h, "\r\n"+jsapi.HeaderLastSequence+": "...)
	h = strconv.AppendUint(h, rp.last, 10)
	h = append(h, "\r\n"...)
	body := data
	if rp.headersOnly {
		h = append(h, jsapi.HeaderMsgSize+": "...)
		h = strconv.AppendInt(h, int64(len(data)), 10)
		h = append(h, "\r\n"...)
		body = nil
	}
	h = append(h, "\r\n"...)
	s.eng.bus.Publish(rp.dest, "", h, body)
	if cap(h) <= 4<<10 {
		*bp = h[:0]
		s.xf.rpBuf.Store(bp)
	}
}

func appendHeader(h []byte, k, v string) []byte {
	h = append(h, k...)
	h = append(h, ": "...)
	h = append(h, v...)
	return append(h, "\r\n"...)
}
