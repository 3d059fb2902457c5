package outbox

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/leaf/internal/runstate"
	"github.com/leafbox/leafbox/store"
)

// Capture stores a message (copying the slices) and returns once the
// stream holds it, durably when the stream syncs before returning. It
// stores the message with its Nats-Msg-Id (IDPrefix and a number), unless
// the publisher gave one, and with Config.Clock its capture stamp. A
// message the stream refuses is counted as dropped and the error
// returned.
func (o *Outbox) Capture(subject string, hdr, data []byte) error {
	return o.capture(subject, hdr, data)
}

// CaptureBytes is Capture for a subject given as bytes, as the broker
// hands a message to a subscriber; all three slices are borrowed for the
// call. It runs on the publisher's read goroutine, so it is budgeted: a
// subject captured before (one of the first subject.MaxNames distinct ones)
// costs no allocation, and the header Capture stores is built in a pooled
// buffer.
func (o *Outbox) CaptureBytes(subject, hdr, data []byte) error {
	return o.capture(o.names.Name(subject), hdr, data)
}

func (o *Outbox) capture(subject string, hdr, data []byte) error {
	o.captured.Add(1)
	buf := headerBufs.Get().(*[]byte)
	hdr, built := o.captureHeader((*buf)[:0], hdr)
	if o.cfg.DiskLow != nil && o.cfg.DiskLow() {
		o.dropOldest()
	}
	seq, _, err := o.stream.Store(subject, hdr, data, 0) // copies hdr
	if built && cap(hdr) <= maxPooledHeader {
		*buf = hdr[:0]
	}
	headerBufs.Put(buf)
	if err != nil {
		switch {
		case errors.Is(err, store.ErrStoreFull):
			o.storeFull.Add(1)
		case errors.Is(err, store.ErrMaxMsgs) || errors.Is(err, store.ErrMaxBytes):
			o.rejected.Add(1)
		default:
			o.storeErrors.Add(1)
		}
		o.rs.SetError(fmt.Errorf("outbox: capture %s: %w", subject, err))
		return err
	}
	o.stored.Add(1)
	if o.syncer != nil {
		raise(&o.written, seq) // durable after the next Sync
	} else {
		raise(&o.durable, seq)
	}
	runstate.Signal(o.newMsg)
	o.rs.Changed()
	return nil
}

// headerBufs holds the buffers capture builds stored headers in (a
// *[]byte each); one of more than maxPooledHeader bytes is not kept.
var headerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

const maxPooledHeader = 4 << 10

// captureHeader appends to dst, and returns, hdr with what Capture stores
// with a message: a Nats-Msg-Id unless hdr has one, and with Config.Clock
// the capture stamp unless hdr has one. When there is nothing to add it
// returns hdr itself and built false. The added fields are built on the
// stack; the block takes one allocation when dst has no room, none when
// it has. hdr is only read.
func (o *Outbox) captureHeader(dst, hdr []byte) (out []byte, built bool) {
	addID := !proto.HasHeaderFold(hdr, HeaderMsgID)
	addStamp := o.cfg.Clock != nil && !hasStamp(hdr)
	if !addID && !addStamp {
		return hdr, false
	}
	var room [192]byte // the stamp, the number and the framing, with a short id base
	add := room[:0]
	if addID {
		add = append(add, HeaderMsgID+": "...)
		add = append(add, o.idBase...)
		add = strconv.AppendUint(add, o.ids.Add(1), 10)
		add = append(add, "\r\n"...)
	}
	if addStamp {
		add = appendStamp(add, o.cfg.Clock.Stamp())
	}
	return proto.AppendHeaderFields(dst, hdr, add), true
}
