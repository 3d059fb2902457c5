package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Forwarding modes (Status.Mode).
const (
	// ModeBatch forwards as JetStream fast batches (doc.go, "Batches").
	ModeBatch = "batch"
	// ModePerMessage forwards each message as its own publish, with a
	// PubAck each.
	ModePerMessage = "per_message"
)

// Fast batch wire form, as nats-server v2.15.2 parses it from a
// publish's reply subject (stream.go getFastBatch):
// <prefix>.<batch id>.<flow>.<gap mode>.<batch seq>.<op>.$FI.
const (
	batchSuffix   = ".$FI"
	batchGapFail  = "fail"
	batchOpStart  = '0'
	batchOpAppend = '1'
	batchOpCommit = '2'
	// batchOpCommitEOB commits the batch with a message that is not
	// stored: its end.
	batchOpCommitEOB = '3'
	// batchIDChars is the length of a batch id: 40 random bits. The hub
	// keeps one table of open batches per stream for every gateway that
	// feeds it; should another gateway's open batch have the same id, the
	// hub answers the first message of ours with a gap, which ends the
	// round, and the next round draws new ids (the replies reach only the
	// inbox of the message that caused them, which is unique).
	batchIDChars = 8
	// maxBatchFlow is the most messages between two flow acks the hub
	// grants (nats-server caps it at 500).
	maxBatchFlow = 500
	// batchRetryAfter is how long the forwarder keeps to per-message
	// publishes after the hub refused fast batches, before it tries again
	// (the hub may have been upgraded or its stream reconfigured).
	batchRetryAfter = 5 * time.Minute
)

// JetStream error codes of fast batch publishing (nats-server v2.15.2).
const (
	errCodeBatchDisabled = 10205 // the stream does not allow_batched
	errCodeBatchPattern  = 10206 // the reply subject is not a valid batch
)

// errBatchUnsupported ends a round whose hub does not take fast batches.
var errBatchUnsupported = errors.New("outbox: the hub stream does not take fast batch publishes")

// batchMode is the forwarder's choice between batches and per-message
// publishes; only the forwarder writes it.
type batchMode struct {
	perMessage atomic.Bool // the hub refused batches at since
	since      time.Time
}

// useBatch reports whether the next round forwards in batches.
func (o *Outbox) useBatch() bool {
	if !o.cfg.Batch {
		return false
	}
	if o.mode.perMessage.Load() && time.Since(o.mode.since) < batchRetryAfter {
		return false
	}
	o.mode.perMessage.Store(false)
	return true
}

// fallBack switches to per-message publishes, for batchRetryAfter.
func (o *Outbox) fallBack(why string) {
	if !o.mode.perMessage.Load() {
		o.log.Warn("uplink hub does not take fast batch publishes; forwarding each message with its own PubAck",
			"reason", why, "retry_batch_after", batchRetryAfter)
	}
	o.mode.since = time.Now()
	o.mode.perMessage.Store(true)
}

// batchFlow returns the flow (messages between flow acks) asked for a
// batch: half the window's floor, so that acks keep arriving while the
// window is at its smallest.
func (o *Outbox) batchFlow() int { return max(1, min(maxBatchFlow, o.cfg.Window/2)) }

// batchLinger is how long the forwarder, caught up with the captures,
// waits for another before it commits the open batch with an end-of-batch
// message: the hub stored the batch's messages as they came, the commit
// only brings the PubAck for those after the last flow ack.
const batchLinger = 20 * time.Millisecond

// openBatch is a batch the forwarder sent in the current round.
type openBatch struct {
	id        string
	seqs      []uint64  // outbox sequence of each batch sequence (index+1)
	acked     int       // batch sequences 1..acked are stored in the hub stream
	committed bool      // its commit was sent
	known     bool      // the hub answered with a flow ack: it takes batches
	subject   string    // the hub subject of its last message, for the commit
	deadline  time.Time // when the commit's PubAck is due
}

// batchReply is a fast batch reply: a flow ack, gap or error, or the
// PubAck of the commit.
type batchReply struct {
	Type   string          `json:"type"`
	Seq    uint64          `json:"seq"`
	Stream string          `json:"stream"`
	Batch  string          `json:"batch"`
	Count  int             `json:"count"`
	Error  *jsapi.APIError `json:"error"`
}

// batchRound forwards from the stream's first message in fast batches
// until something fails or ctx ends (see doc.go, "Batches"), and reports
// whether any message was acknowledged.
func (o *Outbox) batchRound(ctx context.Context) (progress bool, err error) {
	o.rounds++
	pending := newPendingSet()
	o.win.reset()
	var order []inflight
	var batches []*openBatch // sent and not yet closed by their PubAck, oldest first
	var cur *openBatch       // the last of them while it is not committed
	next := o.stream.State().FirstSeq
	var sm store.Msg
	var replyBuf []byte
	flow := strconv.Itoa(o.batchFlow())
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	defer o.sched.idle(o.slot)
	reply := func(b *openBatch, bseq int, op byte) string {
		replyBuf = append(replyBuf[:0], o.inbox...)
		replyBuf = append(replyBuf, b.id...)
		replyBuf = append(append(append(replyBuf, '.'), flow...), "."+batchGapFail+"."...)
		replyBuf = strconv.AppendUint(replyBuf, uint64(bseq), 10)
		replyBuf = append(append(append(replyBuf, '.'), op), batchSuffix...)
		return string(replyBuf) // a Hub may keep it: strings are immutable
	}
	apply := func() error {
		n, err := o.processBatchReplies(pending, &batches)
		if cur != nil && (len(batches) == 0 || batches[len(batches)-1] != cur) {
			cur = nil
		}
		o.inFlight.Store(int64(pending.len()))
		o.rs.Changed()
		if n > 0 {
			progress = true
		}
		return err
	}
	poll := func() error {
		select {
		case <-o.ackSig:
			return apply()
		default:
			return nil
		}
	}
	var idleSince time.Time // when the forwarder caught up with an open batch
	for {
		for o.win.open(pending.len(), pending.bytes) {
			if err := poll(); err != nil {
				return progress, err
			}
			m, err := o.stream.LoadNext("", next, &sm)
			if errors.Is(err, store.ErrNotFound) {
				break
			}
			if err != nil {
				return progress, fmt.Errorf("outbox: load: %w", err)
			}
			if m.Seq > o.durable.Load() {
				if m.Seq > o.written.Load() {
					break
				}
				if err := o.Sync(); err != nil {
					return progress, err
				}
			}
			newBatch := cur == nil
			if newBatch && len(batches) > 0 {
				// The next batch starts once the last is closed by its
				// PubAck: nothing ties one batch to the next at the hub, so
				// a later batch stored while an earlier one was lost (a
				// stream leader dying with its proposals) would leave the
				// earlier one's re-sent messages behind it.
				break
			}
			idleSince = time.Time{}
			b := cur
			if newBatch {
				b = &openBatch{id: randomToken(batchIDChars)}
			}
			bseq := len(b.seqs) + 1
			op := byte(batchOpAppend)
			switch {
			case newBatch && m.Seq >= o.written.Load():
				op = batchOpCommit // nothing more captured: a batch of one, as a publish with its PubAck
			case newBatch:
				op = batchOpStart
			}
			hdr := o.batchHeader(m.Header, m.Seq, bseq == 1)
			subj := o.HubSubject(m.Subject)
			size := len(subj) + len(hdr) + len(m.Data)
			if err := o.acquire(ctx, size, apply); err != nil {
				return progress, err
			}
			next = m.Seq + 1
			if err := o.hub.Publish(subj, reply(b, bseq, op), hdr, m.Data); err != nil {
				err = fmt.Errorf("outbox: publish: %w", err)
				dead, ferr := o.failed(ctx, m.Seq, subj, err)
				if dead {
					// Never sent: the batch has no gap; go on with the next.
					progress = true
					o.meter.touch()
					continue
				}
				return progress, ferr
			}
			o.meter.touch()
			o.forwarded.Add(1)
			now := time.Now()
			b.seqs = append(b.seqs, m.Seq)
			b.subject = subj
			if newBatch {
				batches = append(batches, b)
				cur = b
			}
			if op == batchOpCommit {
				b.committed, b.deadline, cur = true, now.Add(o.cfg.AckTimeout), nil
			}
			pending.add(m.Seq, sentMsg{size: size, data: len(m.Data), at: now})
			order = append(order, inflight{seq: m.Seq, deadline: now.Add(o.cfg.AckTimeout)})
			o.inFlight.Store(int64(pending.len()))
			o.rs.Changed()
		}
		o.sched.idle(o.slot)
		select {
		case <-o.ackSig:
			if err := apply(); err != nil {
				return progress, err
			}
			continue
		default:
		}
		// Caught up (or the window is full) with a batch open: commit it
		// once no capture came for batchLinger, when the hub has shown it
		// takes batches (an old hub would store the end-of-batch message).
		var linger <-chan time.Time
		if cur != nil && len(cur.seqs) > 0 && pending.len() < o.win.size {
			now := time.Now()
			if idleSince.IsZero() {
				idleSince = now
			}
			if cur.known && now.Sub(idleSince) >= batchLinger {
				b := cur
				if err := o.hub.Publish(b.subject, reply(b, len(b.seqs)+1, batchOpCommitEOB), nil, nil); err != nil {
					return progress, fmt.Errorf("outbox: publish the commit of batch %s: %w", b.id, err)
				}
				b.committed, b.deadline, cur = true, now.Add(o.cfg.AckTimeout), nil
				idleSince = time.Time{}
				continue
			}
			if cur.known {
				linger = time.After(batchLinger - now.Sub(idleSince))
			}
		}
		for len(order) > 0 {
			if _, ok := pending.get(order[0].seq); ok {
				break
			}
			order = order[1:]
		}
		var timeout <-chan time.Time
		var commitDue *openBatch
		switch {
		case len(order) > 0:
			timer.Reset(time.Until(order[0].deadline))
			timeout = timer.C
		case len(batches) > 0 && batches[0].committed:
			commitDue = batches[0] // flow acks covered it all; its PubAck closes it
			timer.Reset(time.Until(commitDue.deadline))
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
			return progress, ctx.Err()
		case <-o.newMsg:
		case <-linger:
		case <-o.ackSig:
			if err := apply(); err != nil {
				return progress, err
			}
		case <-timeout:
			if commitDue != nil {
				return progress, fmt.Errorf("%w: the commit of batch %s after %v", ErrAckTimeout, commitDue.id, o.cfg.AckTimeout)
			}
			head := order[0]
			err := fmt.Errorf("%w: sequence %d after %v", ErrAckTimeout, head.seq, o.cfg.AckTimeout)
			subj := ""
			if o.cfg.HubDomain != "" {
				if m, lerr := o.stream.Load(head.seq, &sm); lerr == nil {
					subj = o.HubSubject(m.Subject)
				}
			}
			// The batch is broken either way: a dead-lettered message
			// leaves a gap the hub would refuse, so the round ends.
			if dead, ferr := o.failed(ctx, head.seq, subj, err); dead {
				progress = true
			} else {
				err = ferr
			}
			return progress, err
		}
	}
}

// processBatchReplies applies the fast batch replies received so far to
// the batches of the round: a flow ack or a commit's PubAck removes the
// messages it covers, the PubAck of a complete batch closes it (it leaves
// *batches). It returns how many messages it removed and the failure that
// ends the round, if any, after applying every ack. Replies to another
// batch (an earlier round's) are dropped: what they acknowledged is sent
// again, and the hub's duplicate window stores it once.
func (o *Outbox) processBatchReplies(pending *pendingSet, batches *[]*openBatch) (int, error) {
	o.ackMu.Lock()
	list := o.ackList
	o.ackList = nil
	o.ackMu.Unlock()
	now := time.Now()
	var done []ackedMsg
	var first error
	fail := func(err error) {
		if first == nil {
			first = err
		}
	}
	dead := 0
	var group []time.Time // the send times of what one ack covers
	for _, r := range list {
		if r.batch == "" || first != nil {
			continue
		}
		var b *openBatch
		for _, c := range *batches {
			if c.id == r.batch {
				b = c
				break
			}
		}
		if b == nil {
			continue
		}
		ackUpTo := func(n int) {
			group = group[:0]
			for ; b.acked < n && b.acked < len(b.seqs); b.acked++ {
				seq := b.seqs[b.acked]
				sent, ok := pending.get(seq)
				if !ok {
					continue
				}
				group = append(group, sent.at)
				pending.del(seq)
				done = append(done, ackedMsg{seq: seq, size: sent.size, data: sent.data})
			}
			o.win.ackedGroup(now, group)
		}
		// The outbox sequence of batch sequence bseq, 0 for none.
		about := func(bseq uint64) uint64 {
			if bseq >= 1 && bseq <= uint64(len(b.seqs)) {
				return b.seqs[bseq-1]
			}
			return 0
		}
		var rep batchReply
		if len(r.data) == 0 {
			fail(fmt.Errorf("%w: batch %s sequence %d: empty reply", ErrNoResponders, b.id, r.seq))
			continue
		}
		if err := json.Unmarshal(r.data, &rep); err != nil {
			fail(fmt.Errorf("outbox: batch %s sequence %d: invalid reply %q", b.id, r.seq, truncate(r.data)))
			continue
		}
		switch {
		case rep.Type == "ack":
			b.known = true
			ackUpTo(int(min(rep.Seq, uint64(len(b.seqs)))))
		case rep.Type == "gap":
			fail(fmt.Errorf("outbox: batch %s: the hub reports a gap at %d", b.id, rep.Seq))
		case rep.Error != nil && (rep.Error.ErrCode == errCodeBatchDisabled || rep.Error.ErrCode == errCodeBatchPattern):
			o.fallBack(rep.Error.Description)
			fail(fmt.Errorf("%w: %w", errBatchUnsupported, hubError{rep.Error}))
		case rep.Error != nil:
			bseq := r.seq
			if rep.Type == "err" {
				bseq = rep.Seq
			}
			seq := about(bseq)
			err := classifyAPIError(rep.Error, fmt.Errorf("outbox: sequence %d: %w", seq, hubError{rep.Error}))
			var rf *RefusedError
			if seq != 0 && errors.As(err, &rf) {
				ok, derr := o.refuse(seq, rf, false)
				if derr != nil {
					err = errors.Join(err, derr)
				}
				if ok {
					pending.del(seq)
					dead++
				}
			}
			fail(err)
		case rep.Stream == "":
			fail(fmt.Errorf("outbox: batch %s sequence %d: invalid reply %q", b.id, r.seq, truncate(r.data)))
		case o.cfg.Stream != "" && rep.Stream != o.cfg.Stream:
			o.wrongStream.Add(1)
			o.log.Error("uplink batch PubAck from an unexpected stream; messages kept",
				"batch", b.id, "stream", rep.Stream, "want", o.cfg.Stream)
			fail(fmt.Errorf("%w: batch %s stored in %q, want %q", ErrWrongStream, b.id, rep.Stream, o.cfg.Stream))
		case rep.Batch == "":
			// A PubAck without a batch: the hub took the reply for an
			// ordinary one (a nats-server before fast batches) and
			// stored this message alone.
			if seq := about(r.seq); seq != 0 {
				if sent, ok := pending.get(seq); ok {
					pending.del(seq)
					done = append(done, ackedMsg{seq: seq, size: sent.size, data: sent.data})
				}
			}
			o.noteHubSeq(rep.Stream, rep.Seq)
			if len(b.seqs) > 1 || !b.committed {
				o.fallBack("the hub answered a batch message with an ordinary PubAck")
				fail(errBatchUnsupported)
			} else {
				removeBatch(batches, b) // a batch of one: its PubAck is the same either way
			}
		default: // the commit's PubAck: batch sequences 1..count are stored
			ackUpTo(rep.Count)
			if rep.Seq > 0 {
				o.noteHubSeq(rep.Stream, rep.Seq)
			}
			if rep.Count < len(b.seqs) || !b.committed {
				fail(fmt.Errorf("outbox: batch %s ended at %d of %d messages", b.id, rep.Count, len(b.seqs)))
				continue
			}
			removeBatch(batches, b)
		}
	}
	n, err := o.remove(done)
	if err != nil {
		fail(err)
	}
	return n + dead, first
}

// removeBatch drops b from *batches.
func removeBatch(batches *[]*openBatch, b *openBatch) {
	for i, c := range *batches {
		if c == b {
			*batches = append((*batches)[:i], (*batches)[i+1:]...)
			return
		}
	}
}

// batchHeader returns hdr as sent in a batch: as header does, but with
// Nats-Expected-Stream on the batch's first message only. The hub binds
// a batch to the stream that took its first message; a later message
// that another stream captures is refused there (unknown batch id), so
// one check per batch guards every message of it.
func (o *Outbox) batchHeader(hdr []byte, seq uint64, first bool) []byte {
	if first {
		return o.header(hdr, seq)
	}
	if proto.HasHeaderFold(hdr, HeaderMsgID) {
		return hdr
	}
	add := proto.AppendHeaderField(nil, HeaderMsgID, o.legacyBase+strconv.FormatUint(seq, 10))
	return proto.AppendHeaderFields(nil, hdr, add)
}
