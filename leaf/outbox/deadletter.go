package outbox

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/leaf/internal/runstate"
	"github.com/leafbox/leafbox/store"
)

// Headers of a dead-lettered message, beside its original header (which
// keeps the Nats-Msg-Id it was sent with).
const (
	HeaderDeadReason   = "Leafbox-Dead-Reason"   // the refusal reason (ReasonNoStream, ...)
	HeaderDeadError    = "Leafbox-Dead-Error"    // the hub's error, on one line
	HeaderDeadTime     = "Leafbox-Dead-Time"     // when it was dead-lettered, RFC 3339 UTC
	HeaderDeadSeq      = "Leafbox-Dead-Seq"      // its sequence in the outbox
	HeaderDeadRefusals = "Leafbox-Dead-Refusals" // how many permanent refusals it got
	deadHeaderPrefix   = "Leafbox-Dead-"
)

// DropRejectedByHub is the Status.Dropped reason of the messages moved to
// the dead-letter stream (Config.DeadLetter). They are not lost: Requeue
// brings them back.
const DropRejectedByHub = "rejected_by_hub"

// DropDeadLetterLimits is the Status.Dropped reason of dead-lettered
// messages the dead-letter stream evicted by its own limits (its oldest
// go first); those are lost.
const DropDeadLetterLimits = "dead_letter_limits"

// DeadLetter describes one dead-lettered message.
type DeadLetter struct {
	// Seq is its sequence in the dead-letter stream, which Requeue takes.
	Seq uint64
	// Subject is the captured (local) subject; Size its header and
	// payload bytes.
	Subject string
	Size    int
	// Reason and Error are the refusal: a Reason constant and the hub's
	// error. Time is when it was dead-lettered.
	Reason, Error string
	Time          time.Time
	// OutboxSeq is its sequence in the outbox; MsgID the Nats-Msg-Id it
	// was sent with; Refusals how many permanent refusals it got.
	OutboxSeq uint64
	MsgID     string
	Refusals  int
}

// refusal is the last permanent refusal, for Status.
type refusal struct {
	text string
	at   time.Time
}

// refuse records a permanent refusal of outbox message seq and reports
// whether it moved the message to the dead-letter stream: at the
// Config.DeadLetterAfter-th refusal, or at once when now is set. Without
// a dead-letter stream it only counts. The forwarder alone calls it.
func (o *Outbox) refuse(seq uint64, rf *RefusedError, now bool) (bool, error) {
	defer o.rs.Changed()
	o.refusals.Add(1)
	o.lastRefusal.Store(&refusal{text: fmt.Sprintf("sequence %d: %v", seq, rf), at: time.Now()})
	n := o.refusedCount[seq] + 1
	o.log.Warn("uplink message refused by the hub", "seq", seq, "reason", rf.Reason, "refusals", n, "error", rf.Err)
	if o.cfg.DeadLetter == nil || (!now && n < o.cfg.DeadLetterAfter) {
		if len(o.refusedCount) >= 1024 {
			first := o.stream.State().FirstSeq
			for s := range o.refusedCount {
				if s < first {
					delete(o.refusedCount, s)
				}
			}
		}
		o.refusedCount[seq] = n
		return false, nil
	}
	if err := o.deadLetter(seq, rf, n); err != nil {
		o.refusedCount[seq] = n
		return false, err
	}
	delete(o.refusedCount, seq)
	return true, nil
}

// deadLetter moves outbox message seq to Config.DeadLetter: it is stored
// there (durably: the dead-letter stream syncs in Store) with the refusal
// in its header before it is removed from the outbox, so a crash between
// the two leaves a copy in both, never in neither.
func (o *Outbox) deadLetter(seq uint64, rf *RefusedError, refusals int) error {
	var sm store.Msg
	m, err := o.stream.Load(seq, &sm)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrDeleted) {
		return nil // acknowledged late, or dropped, meanwhile
	}
	if err != nil {
		return fmt.Errorf("outbox: dead letter %d: load: %w", seq, err)
	}
	hdr := m.Header
	var add []byte
	if !proto.HasHeaderFold(hdr, HeaderMsgID) {
		if id, ok := proto.HeaderValueFold(o.header(hdr, seq), HeaderMsgID); ok {
			add = proto.AppendHeaderField(add, HeaderMsgID, id)
		}
	}
	add = proto.AppendHeaderField(add, HeaderDeadReason, rf.Reason)
	add = proto.AppendHeaderField(add, HeaderDeadError, rf.Err.Error())
	add = proto.AppendHeaderField(add, HeaderDeadTime, time.Now().UTC().Format(time.RFC3339Nano))
	add = proto.AppendHeaderField(add, HeaderDeadSeq, strconv.FormatUint(seq, 10))
	add = proto.AppendHeaderField(add, HeaderDeadRefusals, strconv.Itoa(refusals))
	if _, _, err := o.cfg.DeadLetter.Store(m.Subject, proto.AppendHeaderFields(nil, hdr, add), m.Data, 0); err != nil {
		return fmt.Errorf("outbox: dead letter %d: %w", seq, err)
	}
	o.deadLettered.Add(1) // counted first, as acks are: Status never sees it unaccounted
	ok, err := o.stream.Remove(seq, false)
	if err != nil || !ok {
		o.deadLettered.Add(^uint64(0))
	}
	if err != nil {
		return fmt.Errorf("outbox: dead letter %d: remove: %w", seq, err)
	}
	o.log.Error("uplink message dead-lettered; forwarding goes on with the next",
		"seq", seq, "subject", m.Subject, "reason", rf.Reason, "error", rf.Err)
	return nil
}

// DeadLetters lists up to limit dead-lettered messages from dead-letter
// sequence from on (0 or 1 for the first), oldest first. It returns nil
// without a dead-letter stream.
func (o *Outbox) DeadLetters(from uint64, limit int) ([]DeadLetter, error) {
	dl := o.cfg.DeadLetter
	if dl == nil {
		return nil, nil
	}
	var out []DeadLetter
	var sm store.Msg
	for next := max(from, dl.State().FirstSeq); limit <= 0 || len(out) < limit; {
		m, err := dl.LoadNext("", next, &sm)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("outbox: dead letters: %w", err)
		}
		next = m.Seq + 1
		d := DeadLetter{Seq: m.Seq, Subject: m.Subject, Size: len(m.Header) + len(m.Data)}
		d.Reason, _ = headerValue(m.Header, HeaderDeadReason)
		d.Error, _ = headerValue(m.Header, HeaderDeadError)
		d.MsgID, _ = headerValue(m.Header, HeaderMsgID)
		if v, ok := headerValue(m.Header, HeaderDeadTime); ok {
			d.Time, _ = time.Parse(time.RFC3339Nano, v)
		}
		if v, ok := headerValue(m.Header, HeaderDeadSeq); ok {
			d.OutboxSeq, _ = strconv.ParseUint(v, 10, 64)
		}
		if v, ok := headerValue(m.Header, HeaderDeadRefusals); ok {
			d.Refusals, _ = strconv.Atoi(v)
		}
		out = append(out, d)
	}
	return out, nil
}

// ErrNoDeadLetter is returned by Requeue when the outbox has no
// dead-letter stream.
var ErrNoDeadLetter = errors.New("outbox: no dead-letter stream")

// Requeue moves the dead-lettered messages with the given dead-letter
// sequences back to the outbox's tail, in sequence order, and returns how
// many it moved; a sequence the dead-letter stream does not hold is an
// error, after the others moved. A requeued message forwards with the
// Nats-Msg-Id it was first sent with, so that the hub's duplicate window
// still drops it should the hub have stored it after all; one refused as
// ReasonDuplicateID gets a new id. Each is durable in the outbox before it
// leaves the dead-letter stream.
func (o *Outbox) Requeue(seqs []uint64) (int, error) {
	if o.cfg.DeadLetter == nil {
		return 0, ErrNoDeadLetter
	}
	o.requeueMu.Lock()
	defer o.requeueMu.Unlock()
	sorted := append([]uint64(nil), seqs...)
	slices.Sort(sorted)
	var missing []string
	var moved []uint64
	var sm store.Msg
	for i, seq := range sorted {
		if i > 0 && seq == sorted[i-1] {
			continue
		}
		m, err := o.cfg.DeadLetter.Load(seq, &sm)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrDeleted) {
			missing = append(missing, strconv.FormatUint(seq, 10))
			continue
		}
		if err != nil {
			return o.finishRequeue(moved, fmt.Errorf("outbox: requeue %d: %w", seq, err))
		}
		if err := o.requeueOne(m); err != nil {
			return o.finishRequeue(moved, fmt.Errorf("outbox: requeue %d: %w", seq, err))
		}
		moved = append(moved, seq)
	}
	var err error
	if len(missing) > 0 {
		err = fmt.Errorf("outbox: requeue: no dead-lettered message %s", strings.Join(missing, ", "))
	}
	return o.finishRequeue(moved, err)
}

// RequeueAll moves every dead-lettered message back to the outbox's tail,
// as Requeue does.
func (o *Outbox) RequeueAll() (int, error) {
	all, err := o.DeadLetters(0, 0)
	if err != nil {
		return 0, err
	}
	seqs := make([]uint64, len(all))
	for i, d := range all {
		seqs[i] = d.Seq
	}
	return o.Requeue(seqs)
}

// requeueOne stores the dead-lettered message m at the outbox's tail,
// without its Leafbox-Dead-* headers (and with a new Nats-Msg-Id when its
// id was the reason).
func (o *Outbox) requeueOne(m *store.Msg) error {
	defer o.rs.Changed()
	reason, _ := headerValue(m.Header, HeaderDeadReason)
	hdr := proto.DeleteHeaders(m.Header, func(name []byte) bool {
		return proto.HeaderNameHasPrefix(name, deadHeaderPrefix) ||
			(reason == ReasonDuplicateID && proto.HeaderNameIs(name, HeaderMsgID))
	})
	if reason == ReasonDuplicateID {
		// A fresh id of this opening, never one the hub has seen.
		hdr = proto.AppendHeader(nil, hdr, HeaderMsgID, o.idBase+strconv.FormatUint(o.ids.Add(1), 10))
	}
	o.requeued.Add(1) // counted first: Status never sees more in the stream than came in
	seq, _, err := o.stream.Store(m.Subject, hdr, m.Data, 0)
	if err != nil {
		o.requeued.Add(^uint64(0))
		return err
	}
	if o.syncer != nil {
		raise(&o.written, seq)
	} else {
		raise(&o.durable, seq)
	}
	return nil
}

// finishRequeue makes the requeued messages durable in the outbox, then
// removes them from the dead-letter stream.
func (o *Outbox) finishRequeue(moved []uint64, err error) (int, error) {
	if len(moved) == 0 {
		return 0, err
	}
	if serr := o.Sync(); serr != nil {
		return 0, errors.Join(err, serr) // the copies stay dead-lettered too
	}
	runstate.Signal(o.newMsg)
	for _, seq := range moved {
		if _, rerr := o.cfg.DeadLetter.Remove(seq, false); rerr != nil && err == nil {
			err = fmt.Errorf("outbox: requeue %d: remove the dead letter: %w", seq, rerr)
		}
	}
	o.log.Info("uplink dead-lettered messages requeued", "count", len(moved))
	return len(moved), err
}

// MsgID returns the Nats-Msg-Id Capture gives the n-th message captured
// since this outbox was opened (counting from 1) when its publisher set
// none.
func (o *Outbox) MsgID(n uint64) string { return o.idBase + strconv.FormatUint(n, 10) }
