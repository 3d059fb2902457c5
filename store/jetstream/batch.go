package jetstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Atomic batch publish, as nats-server 2.12 defines it (API level 2).
//
// A publisher sends messages with Nats-Batch-Id and Nats-Batch-Sequence
// (1, 2, ...) to a stream with allow_atomic; the last one carries
// Nats-Batch-Commit "1" (it is stored too) or "eob" (it only ends the
// batch). The stream stages the messages in memory; an intermediate
// message with a reply gets an empty message back. At the commit every
// staged message is checked as a publish would be, with the batch's rules
// (expected sequences only on the first message of a subject, no
// duplicate Nats-Msg-Id, no Nats-Expected-Last-Msg-Id, rollups only on a
// subject's first message), and then all of them are stored with one
// store.BatchStorer call under the stream lock, or none when a check
// fails. Counters and schedules use the publish path's steps: a counter
// stream's Nats-Incr is checked and applied as for a publish, with a
// running total per subject across the batch (the stored messages carry
// the totals; the commit's PubAck has no "val", as in nats-server), and a
// schedule is checked as for a publish (a cancel's Nats-Scheduler is
// looked up among the batch's earlier messages first) and registered,
// or cancelled, once the batch is stored. The commit's PubAck carries the last sequence, the batch id and
// the count. A gap in the sequence, a batch idle for BatchTimeout (10s),
// more than maxBatchMsgs messages or a commit value other than "1" or
// "eob" abandons the batch.
//
// Crash atomicity. The stored messages keep their batch headers, and the
// last one carries Nats-Batch-Commit "1" (added for "eob"). A file stream
// writes a batch's records with a single write after everything buffered
// before it (filestore.Stream.StoreBatch), so a process killed (kill -9)
// at any point leaves, in the page cache, none of the records, all of
// them, or a prefix ending in a torn record that the file store's
// recovery truncates. Such a prefix is the stream's tail and lacks the
// commit record, and Open removes it (dropTornBatch): after kill -9 every
// batch is there whole or not at all. A power cut gives the same as long
// as the disk completes the batch's write whole, or a prefix of it (the
// vfs crash model, where each write reaches the disk whole or not at all;
// TestAtomicBatchPowerCut loses random subsets of writes). A disk that
// writes back the pages of one multi-page write in any order and loses a
// middle one while keeping the commit record can leave a batch with a
// hole; the file store then reports the corrupt record, but the rest of
// the batch stays.
//
// Staged batches live in memory only and are lost on restart, as
// nats-server discards its staging directory at startup.

// Limits, nats-server's defaults.
const (
	maxBatchIDLen       = 64
	maxBatchMsgs        = 1000
	maxBatchesPerStream = 50
	maxBatchesTotal     = 1000
	defaultBatchTimeout = 10 * time.Second
	batchCommitValue    = "1"
	batchCommitEOB      = "eob"
)

// inflightBatches counts the batches being staged in all streams of the
// process, as nats-server counts them per server.
var inflightBatches atomic.Int64

// atomicBatch is a batch being staged. Guarded by the stream's mu.
type atomicBatch struct {
	msgs  []store.BatchMsg
	timer *time.Timer
}

// handleAtomicBatch runs one message of an atomic batch publish and
// answers reply: empty for a staged message, the PubAck or an error.
func (s *stream) handleAtomicBatch(subj, reply string, id, hdr, data []byte) {
	resp, rps, abandoned := s.processAtomicBatch(subj, reply, id, hdr, data)
	if abandoned != "" {
		s.adviseBatchAbandoned(string(id), abandoned)
	}
	for i := range rps {
		s.republish(&rps[i].rp, rps[i].hdr, rps[i].data)
	}
	if resp == nil || reply == "" {
		return
	}
	s.eng.bus.Publish(reply, "", nil, resp.body)
}

// batchReply is the answer to a batch message: body (possibly empty) is
// sent to the reply unless the committer took it.
type batchReply struct{ body []byte }

// batchRepublish is a stored batch message to republish after the lock.
type batchRepublish struct {
	rp        republishing
	hdr, data []byte
}

// batchError is the error PubAck for err (nil when the stream does not
// ack).
func (s *stream) batchError(err *jsapi.APIError) *batchReply {
	if s.cfg.NoAck {
		return nil
	}
	b, _ := json.Marshal(jsapi.ErrorPubAck(s.name, err))
	return &batchReply{body: b}
}

// processAtomicBatch stages or commits one batch message. It returns the
// answer, the republishes to run and, when the batch was abandoned, the
// reason for the advisory; the caller runs those after s.mu.
func (s *stream) processAtomicBatch(subj, reply string, idb, hdr, data []byte) (*batchReply, []batchRepublish, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, ""
	}
	cfg := &s.cfg
	if cfg.Sealed {
		return s.batchError(jsapi.NewStreamSealedError()), nil, ""
	}
	if refuse := s.eng.cfg.RefusePublish; refuse != nil && refuse() {
		return s.batchError(jsapi.NewInsufficientResourcesError()), nil, ""
	}
	if s.eng.limitExceeded(s.storage, store.Size(subj, hdr, data)) {
		return s.batchError(jsapi.NewAccountResourcesExceededError()), nil, ""
	}
	if cfg.MaxMsgSize > 0 && len(hdr)+len(data) > int(cfg.MaxMsgSize) {
		return s.batchError(jsapi.NewMessageExceedsMaximumError()), nil, ""
	}
	if !cfg.AllowAtomicPublish {
		return s.batchError(jsapi.NewAtomicPublishDisabledError()), nil, ""
	}
	if len(idb) > maxBatchIDLen {
		return s.batchError(jsapi.NewAtomicPublishInvalidBatchIDError()), nil, ""
	}
	seq, err := strconv.ParseUint(string(proto.HeaderValue(hdr, jsapi.HeaderBatchSeq)), 10, 64)
	if err != nil {
		return s.batchError(jsapi.NewAtomicPublishMissingSeqError()), nil, ""
	}
	var commit, eob, commitInvalid bool
	if v := proto.HeaderValue(hdr, jsapi.HeaderBatchCommit); v != nil {
		commit = true
		eob = string(v) == batchCommitEOB
		commitInvalid = !eob && string(v) != batchCommitValue
	}
	size := seq // the "eob" marker is not a message of the batch
	if eob {
		size--
	}

	id := string(idb)
	b := s.batches[id]
	if b == nil {
		if seq != 1 {
			if size > maxBatchMsgs {
				return s.batchError(jsapi.NewAtomicPublishTooLargeBatchError(maxBatchMsgs)), nil, ""
			}
			return s.batchError(jsapi.NewAtomicPublishIncompleteBatchError()), nil, ""
		}
		if len(s.batches)+1 > maxBatchesPerStream {
			return s.batchError(jsapi.NewAtomicPublishTooManyInflightError()), nil, ""
		}
		if inflightBatches.Add(1) > maxBatchesTotal {
			inflightBatches.Add(-1)
			return s.batchError(jsapi.NewAtomicPublishTooManyInflightError()), nil, ""
		}
		b = &atomicBatch{}
		b.timer = time.AfterFunc(s.batchTimeout(), func() { s.expireBatch(id, b) })
		if s.batches == nil {
			s.batches = make(map[string]*atomicBatch)
		}
		s.batches[id] = b
	}
	if commitInvalid {
		s.dropBatchLocked(id, b)
		return s.batchError(jsapi.NewAtomicPublishInvalidBatchCommitError()), nil, ""
	}
	if v := proto.HeaderValue(hdr, jsapi.HeaderRequiredAPILevel); v != nil {
		if level, err := strconv.Atoi(string(v)); len(v) > 0 && (err != nil || level > maxRequiredLevel) {
			s.dropBatchLocked(id, b)
			return s.batchError(jsapi.NewRequiredAPILevelError()), nil, jsapi.BatchAbandonedUnsupported
		}
		hdr = removeHeader(hdr, jsapi.HeaderRequiredAPILevel)
	}
	// A timer that already fired is about to drop the batch.
	expired := !b.timer.Stop()
	if expired || uint64(len(b.msgs))+1 != seq || (seq == 1 && eob) {
		s.dropBatchLocked(id, b)
		return s.batchError(jsapi.NewAtomicPublishIncompleteBatchError()), nil, jsapi.BatchAbandonedIncomplete
	}
	if size > maxBatchMsgs {
		s.dropBatchLocked(id, b)
		return s.batchError(jsapi.NewAtomicPublishTooLargeBatchError(maxBatchMsgs)), nil, jsapi.BatchAbandonedLarge
	}
	if !eob {
		b.msgs = append(b.msgs, store.BatchMsg{Subject: subj, Header: bytes.Clone(hdr), Data: bytes.Clone(data)})
	}
	if !commit {
		b.timer.Reset(s.batchTimeout())
		if cfg.NoAck {
			return nil, nil, ""
		}
		return &batchReply{}, nil, ""
	}
	s.dropBatchLocked(id, b)
	if eob {
		last := &b.msgs[len(b.msgs)-1]
		last.Header = proto.AppendHeader(nil, last.Header, jsapi.HeaderBatchCommit, batchCommitValue)
	}
	r, rps := s.commitBatchLocked(id, reply, b.msgs)
	return r, rps, ""
}

// batchTimeout is how long a batch may idle.
func (s *stream) batchTimeout() time.Duration {
	if t := s.eng.cfg.BatchTimeout; t > 0 {
		return t
	}
	return defaultBatchTimeout
}

// expireBatch abandons batch id when its timer fires, unless it was
// dropped or replaced meanwhile.
func (s *stream) expireBatch(id string, b *atomicBatch) {
	s.mu.Lock()
	expired := s.batches[id] == b
	if expired {
		s.dropBatchLocked(id, b)
	}
	s.mu.Unlock()
	if expired {
		s.adviseBatchAbandoned(id, jsapi.BatchAbandonedTimeout)
	}
}

// adviseBatchAbandoned sends a stream_batch_abandoned advisory on
// STREAM.BATCH_ABANDONED.<stream>. Caller does not hold s.mu.
func (s *stream) adviseBatchAbandoned(id, reason string) {
	e := s.eng
	subj := jsapi.AdvisoryStreamBatchAbandoned + "." + s.name
	if !e.bus.HasInterest(subj) {
		return
	}
	e.publishAdvisory(advBatchAbandoned, subj, &jsapi.StreamBatchAbandonedAdvisory{
		TypedEvent: event(advBatchAbandoned), Stream: s.name, Domain: e.cfg.Domain, Batch: id, Reason: reason,
	})
}

// dropBatchLocked forgets batch id. Caller holds s.mu.
func (s *stream) dropBatchLocked(id string, b *atomicBatch) {
	if s.batches[id] != b {
		return
	}
	b.timer.Stop()
	delete(s.batches, id)
	inflightBatches.Add(-1)
}

// dropBatchesLocked forgets every staged batch (the stream closes).
func (s *stream) dropBatchesLocked() {
	for id, b := range s.batches {
		s.dropBatchLocked(id, b)
	}
}

// batchExpect caches an expected-last-subject-sequence check.
type batchExpect struct{ seq uint64 }

// commitBatchLocked checks the staged messages and stores them all, or
// none. Caller holds s.mu.
func (s *stream) commitBatchLocked(id, reply string, msgs []store.BatchMsg) (*batchReply, []batchRepublish) {
	cfg := &s.cfg
	now := time.Now().UnixNano()
	st := s.store.State()
	var (
		ids      map[string]bool
		inflight = make(map[string]uint64, 1)
		expect   map[string]batchExpect
		rollSub  = make([]bool, len(msgs))
		rollAll  bool
		total    uint64
		// counters holds the batch's running counter totals by
		// subject; scheds, for each subject written so far, whether
		// its latest message in the batch is a schedule.
		counters map[string]*counterTotal
		scheds   map[string]bool
	)
	if cfg.AllowMsgCounter {
		counters = make(map[string]*counterTotal)
	}
	for i := range msgs {
		m := &msgs[i]
		subj, terr := s.xf.ingest(&s.subjects, m.Subject)
		if terr != nil {
			return s.batchError(terr), nil
		}
		m.Subject = subj
		hdr := m.Header
		if v := proto.HeaderValue(hdr, jsapi.HeaderExpectedLastMsgID); len(v) > 0 {
			return s.batchError(jsapi.NewAtomicPublishUnsupportedHeaderBatchError(jsapi.HeaderExpectedLastMsgID)), nil
		}
		if len(hdr) > 1<<16-1 {
			return s.batchError(jsapi.NewStreamHeaderExceedsMaximumError()), nil
		}
		incr, apiErr := checkIncr(cfg, hdr, len(m.Data), false)
		if apiErr != nil {
			return s.batchError(apiErr), nil
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderExpectedStream); len(v) > 0 && string(v) != s.name {
			return s.batchError(jsapi.NewStreamNotMatchError()), nil
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderTTL); len(v) > 0 {
			t, terr := jsapi.ParseTTL(string(v))
			if (terr != nil || t != 0) && !cfg.AllowMsgTTL {
				return s.batchError(jsapi.NewMessageTTLDisabledError()), nil
			}
			if terr != nil {
				return s.batchError(terr), nil
			}
			switch {
			case t > 0:
				m.TTL = t * int64(time.Second)
			case t < 0:
				m.TTL = -1
			}
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderMsgID); len(v) > 0 {
			if _, dup := s.dedupe.lookup(string(v), now); dup || ids[string(v)] {
				return s.batchError(jsapi.NewAtomicPublishContainsDuplicateMessageError()), nil
			}
			if ids == nil {
				ids = make(map[string]bool)
			}
			ids[string(v)] = true
		}
		if proto.HeaderValue(hdr, jsapi.HeaderStreamSource) != nil {
			return s.batchError(jsapi.NewMessageSourceHdrNotAllowedError()), nil
		}
		if cfg.AllowMsgCounter {
			ctr, apiErr := s.countLocked(counters, subj, hdr, m.Data, incr)
			if apiErr != nil {
				return s.batchError(apiErr), nil
			}
			m.Header, m.Data = ctr.hdr, ctr.data
			hdr = m.Header
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderExpectedLastSeq); v != nil {
			want, err := strconv.ParseUint(string(v), 10, 64)
			last := st.LastSeq + uint64(i)
			if err != nil || want != last {
				return s.batchError(jsapi.NewWrongLastSequenceError(last)), nil
			}
			if i > 0 {
				return s.batchError(jsapi.NewWrongLastSequenceConstantError()), nil
			}
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderExpectedLastSubjSeq); v != nil {
			want, err := strconv.ParseUint(string(v), 10, 64)
			checkSubj := subj
			if o := proto.HeaderValue(hdr, jsapi.HeaderExpectedLastSubjSeqSubj); len(o) > 0 {
				checkSubj = string(o)
			}
			if inflight[checkSubj] > 0 {
				return s.batchError(jsapi.NewWrongLastSequenceConstantError()), nil
			}
			e, ok := expect[checkSubj]
			if !ok {
				e = batchExpect{seq: s.store.FilteredState(checkSubj, 0).Last}
				if expect == nil {
					expect = make(map[string]batchExpect)
				}
				expect[checkSubj] = e
			}
			if err != nil || e.seq != want {
				return s.batchError(jsapi.NewWrongLastSequenceError(e.seq)), nil
			}
		} else if o := proto.HeaderValue(hdr, jsapi.HeaderExpectedLastSubjSeqSubj); len(o) > 0 {
			return s.batchError(jsapi.NewStreamExpectedLastSeqPerSubjectInvalidError()), nil
		}
		isSchedule := false
		if len(hdr) > 0 {
			if hdr, isSchedule, apiErr = s.checkScheduleLocked(subj, hdr, false, scheds); apiErr != nil {
				return s.batchError(apiErr), nil
			}
			m.Header = hdr
		}
		if v := proto.HeaderValue(hdr, jsapi.HeaderRollup); len(v) > 0 {
			if !cfg.AllowRollup || cfg.DenyPurge {
				return s.batchError(jsapi.NewStreamRollupFailedError(errors.New("rollup not permitted"))), nil
			}
			switch strings.ToLower(string(v)) {
			case jsapi.RollupSubject:
				if inflight[subj] > 0 {
					return s.batchError(jsapi.NewStreamRollupFailedError(errors.New("batch rollup sub invalid"))), nil
				}
				rollSub[i] = true
			case jsapi.RollupAll:
				if i > 0 {
					return s.batchError(jsapi.NewStreamRollupFailedError(errors.New("batch rollup all invalid"))), nil
				}
				rollAll = true
			default:
				return s.batchError(jsapi.NewStreamRollupFailedError(fmt.Errorf("rollup value invalid: %q", string(v)))), nil
			}
		}
		inflight[subj]++
		if cfg.AllowMsgSchedules {
			if scheds == nil {
				scheds = make(map[string]bool)
			}
			scheds[subj] = isSchedule
		}
		total += store.Size(subj, m.Header, m.Data)
		if cfg.Discard == jsapi.DiscardNew {
			n := uint64(i + 1)
			switch {
			case cfg.MaxMsgs > 0 && st.Msgs+n > uint64(cfg.MaxMsgs):
				return s.batchError(jsapi.StoreError(store.ErrMaxMsgs)), nil
			case cfg.MaxBytes > 0 && st.Bytes+total > uint64(cfg.MaxBytes):
				return s.batchError(jsapi.StoreError(store.ErrMaxBytes)), nil
			}
			if cfg.DiscardNewPerSubject && cfg.MaxMsgsPerSubject > 0 && proto.HeaderValue(hdr, jsapi.HeaderRollup) == nil &&
				s.store.FilteredState(subj, 0).Msgs+inflight[subj] > uint64(cfg.MaxMsgsPerSubject) {
				return s.batchError(jsapi.StoreError(store.ErrMaxMsgsPerSubject)), nil
			}
		}
	}
	if s.eng.limitExceeded(s.storage, total) {
		return s.batchError(jsapi.NewAccountResourcesExceededError()), nil
	}

	// Republish needs each subject's previous sequence.
	var rps []batchRepublish
	var lastBySubj map[string]uint64
	for i := range msgs {
		if dest := s.xf.republishSubject(msgs[i].Subject, msgs[i].Header); dest != "" {
			if lastBySubj == nil {
				lastBySubj = make(map[string]uint64)
			}
			if _, ok := lastBySubj[msgs[i].Subject]; !ok {
				lastBySubj[msgs[i].Subject] = s.store.FilteredState(msgs[i].Subject, 0).Last
			}
		}
	}

	first, ts, err := s.storeBatch(msgs)
	if err != nil {
		return s.batchError(jsapi.StoreError(err)), nil
	}
	last := first + uint64(len(msgs)) - 1
	if rollAll {
		_, _ = s.store.Purge(store.PurgeOptions{Sequence: first})
	}
	cons := s.consumerList()
	for i := range msgs {
		m := &msgs[i]
		seq := first + uint64(i)
		if v := proto.HeaderValue(m.Header, jsapi.HeaderMsgID); len(v) > 0 {
			s.dedupe.add(string(v), seq, now)
			s.lastMsgID = string(v)
		} else {
			s.lastMsgID = ""
		}
		if rollSub[i] {
			_, _ = s.store.Purge(store.PurgeOptions{Subject: m.Subject, Sequence: seq})
		}
		s.scheduleStoredLocked(seq, m.Subject, m.Header, ts)
		if dest := s.xf.republishSubject(m.Subject, m.Header); dest != "" {
			rp := republishing{dest: dest, subj: m.Subject, headersOnly: s.xf.headersOnly, seq: seq, ts: ts, last: lastBySubj[m.Subject]}
			lastBySubj[m.Subject] = seq
			rps = append(rps, batchRepublish{rp: rp, hdr: m.Header, data: m.Data})
		}
	}
	s.resyncConsumersLocked(true)
	for i := range msgs {
		seq := first + uint64(i)
		interested := false
		for _, c := range cons {
			if c.stored(seq, msgs[i].Subject) {
				interested = true
			}
		}
		if cfg.Retention == jsapi.InterestPolicy && !interested {
			s.removeLocked(seq)
		}
	}
	if cfg.NoAck {
		return nil, rps
	}
	body := s.appendBatchPubAck(nil, last, id, len(msgs))
	if s.commit != nil && s.commit.queue(reply, body) {
		return nil, rps
	}
	return &batchReply{body: body}, rps
}

// storeBatch stores msgs as one unit: with the store's BatchStorer, else
// one by one (readers may then see a prefix; every store leafbox has
// implements it).
func (s *stream) storeBatch(msgs []store.BatchMsg) (uint64, int64, error) {
	if bs, ok := s.store.(store.BatchStorer); ok {
		return bs.StoreBatch(msgs)
	}
	var first uint64
	var ts0 int64
	for i := range msgs {
		seq, ts, err := s.store.Store(msgs[i].Subject, msgs[i].Header, msgs[i].Data, msgs[i].TTL)
		if err != nil {
			for j := first; i > 0 && j < seq; j++ {
				_, _ = s.store.Remove(j, false)
			}
			return 0, 0, err
		}
		if i == 0 {
			first, ts0 = seq, ts
		}
	}
	return first, ts0, nil
}

// appendBatchPubAck appends the commit's PubAck, in nats-server's field
// order: stream, domain, seq, batch, count.
func (s *stream) appendBatchPubAck(dst []byte, seq uint64, id string, count int) []byte {
	dst = s.appendPubAck(dst, seq, false)
	dst = dst[:len(dst)-1]
	dst = append(dst, `,"batch":`...)
	dst = strconv.AppendQuote(dst, id)
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendInt(dst, int64(count), 10)
	return append(dst, '}')
}

// removeHeader returns hdr without the field key (a new block; hdr is
// not changed).
func removeHeader(hdr []byte, key string) []byte {
	if proto.HeaderValue(hdr, key) == nil {
		return hdr
	}
	out := make([]byte, 0, len(hdr))
	for i, line := range bytes.SplitAfter(hdr, []byte("\r\n")) {
		if i > 0 {
			if c := bytes.IndexByte(line, ':'); c > 0 && proto.HeaderNameIs(line[:c], key) {
				continue
			}
		}
		out = append(out, line...)
	}
	return out
}

// dropTornBatch removes an atomic batch a crash cut short from the tail
// of a restored stream: when the message at the stream's last sequence
// belongs to a batch and lacks the commit header, it and the messages of
// its batch right before it are removed. A batch whose commit message is
// there was written whole (its records went out in one write, in order),
// even if some of its messages were removed since; a tail message that was
// removed leaves the last sequence without a message, and nothing is done.
func (s *stream) dropTornBatch() {
	st := s.store.State()
	if st.Msgs == 0 {
		return
	}
	var sm store.Msg
	m, err := s.store.Load(st.LastSeq, &sm)
	if err != nil {
		return
	}
	id := proto.HeaderValue(m.Header, jsapi.HeaderBatchID)
	if len(id) == 0 || proto.HeaderValue(m.Header, jsapi.HeaderBatchCommit) != nil {
		return
	}
	id = bytes.Clone(id)
	seqs := []uint64{st.LastSeq}
	for seq := st.LastSeq - 1; seq >= st.FirstSeq && seq > 0; seq-- {
		p, err := s.store.Load(seq, &sm)
		if err != nil || !bytes.Equal(proto.HeaderValue(p.Header, jsapi.HeaderBatchID), id) {
			break
		}
		seqs = append(seqs, seq)
	}
	for _, seq := range seqs {
		_, _ = s.store.Remove(seq, false)
	}
	s.eng.log.Warn("jetstream: removed an atomic batch a crash cut short", "stream", s.name, "batch", string(id), "messages", len(seqs))
}
