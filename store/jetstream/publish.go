package jetstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// handlePublish is the Bus handler for the stream's subjects: it stores
// the message and answers the publisher's reply with a PubAck. Every
// publish that carries a reply gets an answer, success or error; in
// sync-always mode a success waits for the committer's fsync.
func (s *stream) handlePublish(subj, reply, hdr, data []byte) {
	if bytes.HasSuffix(reply, fastBatchSuffix) {
		// Fast batch publish is not implemented; refuse each message.
		b, _ := json.Marshal(jsapi.ErrorPubAck(s.name, jsapi.NewBatchPublishDisabledError()))
		s.eng.bus.Publish(string(reply), "", nil, b)
		return
	}
	if len(hdr) > 0 {
		if id := proto.HeaderValue(hdr, headerBatchID); len(id) > 0 {
			s.handleAtomicBatch(s.subjects.Name(subj), string(reply), id, hdr, data)
			return
		}
	}
	buf := ackBufs.Get().(*[]byte)
	defer ackBufs.Put(buf)
	resp, stored := s.processPublish((*buf)[:0], s.subjects.Name(subj), hdr, data)
	if cap(resp) <= maxPooledAck {
		*buf = resp[:0] // the next publish reuses it: nothing below keeps resp
	}
	if stored && s.commit != nil && s.commit.queue(string(reply), bytes.Clone(resp)) {
		return
	}
	if len(reply) == 0 || resp == nil {
		return
	}
	s.eng.bus.Publish(string(reply), "", nil, resp)
}

// ackBufs holds the buffers PubAcks are built in (a *[]byte each), so
// that a publish answered at once allocates no PubAck.
var ackBufs = sync.Pool{New: func() any { b := make([]byte, 0, 128); return &b }}

const maxPooledAck = 1 << 10

// processPublish runs the publish path. It returns the PubAck body (nil
// when the stream does not ack), appended to dst on success, and whether
// a new message was stored.
func (s *stream) processPublish(dst []byte, subj string, hdr, data []byte) ([]byte, bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, false
	}
	noAck := s.cfg.NoAck
	res, apiErr := s.storeLocked(subj, hdr, data)
	s.mu.Unlock()
	stored := apiErr == nil && !res.duplicate
	if res.hdr != nil {
		hdr, data = res.hdr, res.data // rewritten (counter, schedule)
	}
	if stored && res.rp.dest != "" {
		s.republish(&res.rp, hdr, data)
	}
	if noAck {
		return nil, stored
	}
	if apiErr != nil {
		b, _ := json.Marshal(jsapi.ErrorPubAck(s.name, apiErr))
		return b, false
	}
	dst = s.appendPubAck(dst, res.seq, res.duplicate)
	if res.val != "" {
		dst = appendAckVal(dst[:len(dst)-1], res.val)
	}
	return dst, stored
}

// headerBatchID marks a message of an atomic batch publish (batch.go)
// when its value is not empty; as in nats-server an empty one is an
// ordinary publish. A reply ending in fastBatchSuffix marks one of a fast
// batch publish.
const headerBatchID = "Nats-Batch-Id"

var fastBatchSuffix = []byte(".$FI")

// publishResult is the outcome of a stored (or deduplicated) message.
type publishResult struct {
	seq       uint64
	duplicate bool
	// rp is the republish to run once s.mu is released (rp.dest "" for
	// none).
	rp republishing
	// hdr and data are the message as stored when the stream rewrote it
	// (a counter's total, a schedule's rollup), nil otherwise; val is the
	// counter's total.
	hdr, data []byte
	val       string
}

// appendPubAck appends the success PubAck JSON, in nats-server's field
// order: stream, domain, seq, duplicate.
func (s *stream) appendPubAck(dst []byte, seq uint64, duplicate bool) []byte {
	dst = append(dst, `{"stream":`...)
	dst = strconv.AppendQuote(dst, s.name)
	if d := s.eng.cfg.Domain; d != "" {
		dst = append(dst, `,"domain":`...)
		dst = strconv.AppendQuote(dst, d)
	}
	dst = append(dst, `,"seq":`...)
	dst = strconv.AppendUint(dst, seq, 10)
	if duplicate {
		dst = append(dst, `,"duplicate":true`...)
	}
	return append(dst, '}')
}

// storeLocked checks the message against the stream's rules and stores
// it. Caller holds s.mu.
func (s *stream) storeLocked(subj string, hdr, data []byte) (publishResult, *jsapi.APIError) {
	return s.storeMsgLocked(subj, hdr, data, false)
}

// storeMsgLocked is storeLocked; internal marks a message no client
// published (a schedule's, a mirror's copy), which skips the counter and
// schedule checks meant for clients, as a source's copy (known by its
// Nats-Stream-Source header) does. Caller holds s.mu.
func (s *stream) storeMsgLocked(subj string, hdr, data []byte, internal bool) (publishResult, *jsapi.APIError) {
	cfg := &s.cfg
	if cfg.Sealed {
		return publishResult{}, jsapi.NewStreamSealedError()
	}
	subj, terr := s.xf.ingest(&s.subjects, subj)
	if terr != nil {
		return publishResult{}, terr
	}
	if cfg.MaxMsgSize > 0 && len(hdr)+len(data) > int(cfg.MaxMsgSize) {
		return publishResult{}, jsapi.NewMessageExceedsMaximumError()
	}
	if len(hdr) > 1<<16-1 {
		return publishResult{}, jsapi.NewStreamHeaderExceedsMaximumError()
	}

	var (
		msgID     string
		rollupSub bool
		rollupAll bool
		ttl       int64
		incr      *big.Int
		rewritten bool // hdr or data differ from the publish's
	)
	now := time.Now().UnixNano()
	if len(hdr) > 0 {
		sourced := internal || proto.HeaderValue(hdr, jsapi.HeaderStreamSource) != nil
		var apiErr *jsapi.APIError
		if incr, apiErr = checkIncr(cfg, hdr, len(data), sourced); apiErr != nil {
			return publishResult{}, apiErr
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderExpectedStream); len(v) > 0 && string(v) != s.name {
			return publishResult{}, jsapi.NewStreamNotMatchError()
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderTTL); len(v) > 0 {
			t, terr := jsapi.ParseTTL(string(v))
			if terr == nil && t != 0 && !cfg.AllowMsgTTL {
				return publishResult{}, jsapi.NewMessageTTLDisabledError()
			}
			if terr != nil {
				return publishResult{}, terr
			}
			switch {
			case t > 0:
				ttl = t * int64(time.Second)
			case t < 0:
				ttl = -1
			}
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderExpectedLastSubjSeq); v != nil {
			want, err := strconv.ParseUint(string(v), 10, 64)
			checkSubj := subj
			if o := proto.HeaderValue(hdr, jsapi.HeaderExpectedLastSubjSeqSubj); len(o) > 0 {
				checkSubj = string(o)
			}
			have := s.store.FilteredState(checkSubj, 0).Last
			if err != nil || have != want {
				return publishResult{}, jsapi.NewWrongLastSequenceError(have)
			}
		} else if o := proto.HeaderValue(hdr, jsapi.HeaderExpectedLastSubjSeqSubj); len(o) > 0 {
			return publishResult{}, jsapi.NewStreamExpectedLastSeqPerSubjectInvalidError()
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderExpectedLastSeq); v != nil {
			want, err := strconv.ParseUint(string(v), 10, 64)
			last := s.store.State().LastSeq
			if err != nil || want != last {
				return publishResult{}, jsapi.NewWrongLastSequenceError(last)
			}
		}
		n := len(hdr)
		if hdr, _, apiErr = s.checkScheduleLocked(subj, hdr, sourced, nil); apiErr != nil {
			return publishResult{}, apiErr
		}
		rewritten = len(hdr) != n
		if v := proto.HeaderValue(hdr, jsapi.HeaderMsgID); len(v) > 0 {
			msgID = string(v)
			if seq, ok := s.dedupe.lookup(msgID, now); ok {
				return publishResult{seq: seq, duplicate: true}, nil
			}
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderExpectedLastMsgID); len(v) > 0 && string(v) != s.lastMsgID {
			return publishResult{}, jsapi.NewWrongLastMsgIDError(s.lastMsgID)
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderRollup); len(v) > 0 {
			if !cfg.AllowRollup || cfg.DenyPurge {
				return publishResult{}, jsapi.NewStreamRollupFailedError(errors.New("rollup not permitted"))
			}
			switch strings.ToLower(string(v)) {
			case jsapi.RollupSubject:
				rollupSub = true
			case jsapi.RollupAll:
				rollupAll = true
			default:
				return publishResult{}, jsapi.NewStreamRollupFailedError(errors.New("rollup value invalid: " + strconv.Quote(string(v))))
			}
		}
	}

	var ctr counted
	if cfg.AllowMsgCounter {
		var apiErr *jsapi.APIError
		if ctr, apiErr = s.countLocked(nil, subj, hdr, data, incr); apiErr != nil {
			return publishResult{}, apiErr
		}
		hdr, data, rewritten = ctr.hdr, ctr.data, true
	}

	if refuse := s.eng.cfg.RefusePublish; refuse != nil && refuse() {
		return publishResult{}, jsapi.NewInsufficientResourcesError()
	}
	size := store.Size(subj, hdr, data)
	if s.eng.limitExceeded(s.storage, size) {
		return publishResult{}, jsapi.NewAccountResourcesExceededError()
	}

	// A per-subject limit evicts the subject's oldest message; find it
	// first so consumers that had not reached it can discount it.
	var evicted uint64
	if cfg.MaxMsgsPerSubject > 0 && !cfg.DiscardNewPerSubject {
		if fs := s.store.FilteredState(subj, 0); fs.Msgs >= uint64(cfg.MaxMsgsPerSubject) {
			evicted = fs.First
		}
	}

	var rp republishing
	if rp.dest = s.xf.republishSubject(subj, hdr); rp.dest != "" {
		rp.subj, rp.headersOnly = subj, s.xf.headersOnly
		rp.last = s.store.FilteredState(subj, 0).Last
	}
	seq, ts, err := s.store.Store(subj, hdr, data, ttl)
	if err != nil {
		return publishResult{}, jsapi.StoreError(err)
	}
	rp.seq, rp.ts = seq, ts
	if msgID != "" {
		s.dedupe.add(msgID, seq, now)
	}
	s.lastMsgID = msgID

	if evicted != 0 {
		for _, c := range s.consumerList() {
			c.evicted(evicted, subj)
		}
	}
	switch {
	case rollupSub:
		_, _ = s.store.Purge(store.PurgeOptions{Subject: subj, Keep: 1})
		s.resyncConsumersLocked(true)
	case rollupAll:
		_, _ = s.store.Purge(store.PurgeOptions{Keep: 1})
		s.resyncConsumersLocked(true)
	default:
		s.resyncConsumersLocked(false)
	}
	if s.scheduleStoredLocked(seq, subj, hdr, ts) {
		s.resyncConsumersLocked(true)
	}

	cons := s.consumerList()
	interested := false
	for _, c := range cons {
		if c.stored(seq, subj) {
			interested = true
		}
	}
	if s.cfg.Retention == jsapi.InterestPolicy && !interested {
		// Nobody will ever consume it: an interest stream
		// drops it at once, keeping the sequence.
		s.removeLocked(seq)
	}
	res := publishResult{seq: seq, rp: rp, val: ctr.val}
	if rewritten {
		res.hdr, res.data = hdr, data
	}
	return res, nil
}

// removeLocked deletes one message the engine decided to remove
// (retention). Caller holds s.mu.
func (s *stream) removeLocked(seq uint64) {
	if ok, _ := s.store.Remove(seq, false); ok {
		s.noteRemovalsLocked()
	}
}

// dedupeWindow remembers Nats-Msg-Id values for the duplicate window.
// Entries are kept in arrival order so expiry pops from the front.
type dedupeWindow struct {
	window time.Duration
	ids    map[string]uint64
	order  []dedupeEntry
	head   int
}

type dedupeEntry struct {
	id  string
	seq uint64
	ts  int64
}

// expire drops entries older than the window.
func (d *dedupeWindow) expire(now int64) {
	cut := now - int64(d.window)
	for d.head < len(d.order) && d.order[d.head].ts <= cut {
		e := d.order[d.head]
		if seq, ok := d.ids[e.id]; ok && seq == e.seq {
			delete(d.ids, e.id)
		}
		d.order[d.head] = dedupeEntry{}
		d.head++
	}
	if d.head > 1024 && d.head*2 > len(d.order) {
		d.order = append(d.order[:0], d.order[d.head:]...)
		d.head = 0
	}
}

// lookup returns the sequence stored for id within the window.
func (d *dedupeWindow) lookup(id string, now int64) (uint64, bool) {
	if d.window <= 0 || len(d.ids) == 0 {
		return 0, false
	}
	d.expire(now)
	seq, ok := d.ids[id]
	return seq, ok
}

// add records id as stored at seq.
func (d *dedupeWindow) add(id string, seq uint64, now int64) {
	if d.window <= 0 {
		return
	}
	if d.ids == nil {
		d.ids = make(map[string]uint64)
	}
	d.expire(now)
	d.ids[id] = seq
	d.order = append(d.order, dedupeEntry{id: id, seq: seq, ts: now})
}

// restoreDedupe rebuilds the dedupe window and the last msg id from the
// stored messages after a restart.
func (s *stream) restoreDedupe() {
	st := s.store.State()
	if st.Msgs == 0 {
		return
	}
	var sm store.Msg
	if m, err := s.store.Load(st.LastSeq, &sm); err == nil {
		s.lastMsgID = string(proto.HeaderValue(m.Header, jsapi.HeaderMsgID))
	}
	if s.dedupe.window <= 0 {
		return
	}
	now := time.Now().UnixNano()
	var start uint64
	if ts, ok := s.store.(store.TimeSeeker); ok {
		start = ts.SeqFromTime(now - int64(s.dedupe.window))
	} else {
		start = s.seqFromTime(now - int64(s.dedupe.window))
	}
	// Only a message with a header can carry a msg id: a store that can
	// pass over the others without reading them does.
	next := func(seq uint64) (*store.Msg, error) { return s.store.LoadNext("", seq, &sm) }
	if hl, ok := s.store.(store.HeaderLoader); ok {
		next = func(seq uint64) (*store.Msg, error) { return hl.LoadNextWithHeader(seq, &sm) }
	}
	for seq := start; ; {
		m, err := next(seq)
		if err != nil {
			break
		}
		if id := proto.HeaderValue(m.Header, jsapi.HeaderMsgID); len(id) > 0 {
			if s.dedupe.ids == nil {
				s.dedupe.ids = make(map[string]uint64)
			}
			s.dedupe.ids[string(id)] = m.Seq
			s.dedupe.order = append(s.dedupe.order, dedupeEntry{id: string(id), seq: m.Seq, ts: m.Time})
		}
		seq = m.Seq + 1
	}
}

// seqFromTime returns the first sequence stored at or after ts (Unix ns),
// or LastSeq+1 when every message is older. Store times never decrease
// with the sequence, so a binary search over sequences finds it.
func (s *stream) seqFromTime(ts int64) uint64 {
	st := s.store.State()
	if st.Msgs == 0 {
		return st.LastSeq + 1
	}
	lo, hi := st.FirstSeq, st.LastSeq+1
	var sm store.Msg
	for lo < hi {
		mid := lo + (hi-lo)/2
		m, err := s.store.LoadNext("", mid, &sm)
		if err != nil {
			hi = mid
			continue
		}
		if m.Time >= ts {
			hi = mid
		} else {
			lo = m.Seq + 1
		}
	}
	return lo
}
