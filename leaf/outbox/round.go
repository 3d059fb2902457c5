package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/leaf/internal/runstate"
	"github.com/leafbox/leafbox/store"
)

// run forwards rounds until ctx ends, backing off after each failure.
func (o *Outbox) run(ctx context.Context) {
	defer close(o.done)
	stopMeter := o.startMeter(ctx)
	defer stopMeter()
	failures := 0
	for {
		o.rs.Set(StateWaiting)
		if err := o.hub.WaitReady(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			o.rs.SetError(err)
		} else {
			if !o.drainDelay(ctx) {
				return
			}
			rctx, rcancel := context.WithCancel(ctx)
			o.meter.armRound(rcancel)
			o.rs.Set(StateForwarding)
			var progress bool
			var err error
			if o.useBatch() {
				progress, err = o.batchRound(rctx)
			} else {
				progress, err = o.round(rctx)
			}
			rcancel()
			o.inFlight.Store(0)
			if ctx.Err() != nil {
				return
			}
			stuck := o.meter.disarmRound()
			if errors.Is(err, errBatchUnsupported) && !stuck {
				continue // logged by fallBack: per-message publishes at once
			}
			if stuck {
				err = fmt.Errorf("%w: %v", ErrStuck, err)
			}
			o.retries.Add(1)
			o.rs.SetError(err)
			if progress {
				failures = 0
			}
			o.log.Warn("uplink round failed; retrying", "error", err)
		}
		d := runstate.Backoff(failures, o.cfg.RetryMin, o.cfg.RetryMax)
		failures++
		o.rs.Set(StateBackoff)
		if !runstate.Sleep(ctx, d) {
			return
		}
	}
}

// inflight is one message awaiting its PubAck.
type inflight struct {
	seq      uint64
	deadline time.Time
}

// sentMsg is a message published in the current round.
type sentMsg struct {
	size  int       // bytes published
	data  int       // payload bytes
	first bool      // its first publish, captured by this opening, with the Nats-Msg-Id Capture fixed
	at    time.Time // when it was published
}

// round forwards from the stream's first message until something fails
// or ctx ends, and reports whether any message was acknowledged.
func (o *Outbox) round(ctx context.Context) (progress bool, err error) {
	o.rounds++
	prefix := o.inbox + strconv.FormatUint(o.rounds, 10) + "."
	pending := newPendingSet()
	o.win.reset()
	var order []inflight // sent, in sequence order; acked entries are skipped lazily
	next := o.stream.State().FirstSeq
	var sm store.Msg
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	defer o.sched.idle(o.slot)
	// apply processes the replies received so far.
	apply := func() error {
		n, err := o.processReplies(pending)
		o.inFlight.Store(int64(pending.len()))
		o.rs.Changed()
		if n > 0 {
			progress = true
		}
		return err
	}
	// poll applies the replies received so far, if any: acks that arrive
	// while the scheduler paces the forwarder count before any deadline.
	poll := func() error {
		select {
		case <-o.ackSig:
			return apply()
		default:
			return nil
		}
	}
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
					break // its Capture has not returned: Capture signals newMsg
				}
				if err := o.Sync(); err != nil {
					return progress, err
				}
			}
			hdr := o.header(m.Header, m.Seq)
			subj := o.HubSubject(m.Subject)
			size := len(subj) + len(hdr) + len(m.Data)
			if err := o.acquire(ctx, size, apply); err != nil {
				return progress, err
			}
			next = m.Seq + 1
			if err := o.hub.Publish(subj, prefix+strconv.FormatUint(m.Seq, 10), hdr, m.Data); err != nil {
				err = fmt.Errorf("outbox: publish: %w", err)
				dead, ferr := o.failed(ctx, m.Seq, subj, err)
				if dead {
					progress = true
					o.meter.touch()
					continue // dead-lettered: go on with the next message
				}
				return progress, ferr
			}
			o.meter.touch()
			o.forwarded.Add(1)
			first := m.Seq > o.sentMax && m.Seq > o.openSeq
			if first {
				o.sentMax = m.Seq
				// Only an id this opening fixed at capture proves a
				// duplicate wrong: a publisher's own Nats-Msg-Id may
				// rightly repeat an earlier message's.
				id := proto.HeaderValue(m.Header, HeaderMsgID) // as Capture writes it
				first = len(id) > len(o.idBase) && string(id[:len(o.idBase)]) == o.idBase
			}
			now := time.Now()
			pending.add(m.Seq, sentMsg{size: size, data: len(m.Data), first: first, at: now})
			order = append(order, inflight{seq: m.Seq, deadline: now.Add(o.cfg.AckTimeout)})
			o.inFlight.Store(int64(pending.len()))
			o.rs.Changed()
		}
		o.sched.idle(o.slot) // nothing more to send until an ack or a capture
		select {
		case <-o.ackSig: // acks that arrived while the scheduler held the forwarder
			if err := apply(); err != nil {
				return progress, err
			}
			continue // the window may have room again
		default:
		}
		for len(order) > 0 {
			if _, ok := pending.get(order[0].seq); ok {
				break
			}
			order = order[1:]
		}
		var timeout <-chan time.Time
		if len(order) > 0 {
			timer.Reset(time.Until(order[0].deadline))
			timeout = timer.C
		}
		select {
		case <-ctx.Done():
			return progress, ctx.Err()
		case <-o.newMsg:
		case <-o.ackSig:
			if err := apply(); err != nil {
				return progress, err
			}
		case <-timeout:
			head := order[0]
			err := fmt.Errorf("%w: sequence %d after %v", ErrAckTimeout, head.seq, o.cfg.AckTimeout)
			subj := "" // what a stream lookup asks for (see failed)
			if o.cfg.HubDomain != "" {
				if m, lerr := o.stream.Load(head.seq, &sm); lerr == nil {
					subj = o.HubSubject(m.Subject)
				}
			}
			dead, ferr := o.failed(ctx, head.seq, subj, err)
			if !dead {
				return progress, ferr
			}
			pending.del(head.seq)
			order = order[1:]
			o.inFlight.Store(int64(pending.len()))
			o.rs.Changed()
			progress = true
		}
	}
}

// failed handles a message of the current round that the hub did not
// take: err, a permanent refusal (a *RefusedError in its chain, or an
// ambiguous failure the hub's JetStream confirms as one: see
// Config.HubDomain), is counted and may move the message to the
// dead-letter stream. It reports whether it did; else it returns the
// error that ends the round.
func (o *Outbox) failed(ctx context.Context, seq uint64, subject string, err error) (bool, error) {
	var rf *RefusedError
	if !errors.As(err, &rf) {
		if o.cfg.HubDomain == "" || subject == "" || !(errors.Is(err, ErrNoResponders) || errors.Is(err, ErrAckTimeout)) {
			return false, err
		}
		lerr := o.lookupStream(ctx, subject)
		if !errors.As(lerr, &rf) {
			if lerr != nil {
				o.log.Debug("uplink stream lookup gave no definite answer", "subject", subject, "error", lerr)
			}
			return false, err // transient
		}
		err = fmt.Errorf("%w (%w)", err, rf)
	}
	dead, derr := o.refuse(seq, rf, false)
	if derr != nil {
		return false, errors.Join(err, derr)
	}
	return dead, err
}
