package outbox

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/store"
)

// Header names of the capture stamp Capture adds when Config.Clock is
// set: HeaderTime when the clock is trusted, else HeaderBootID and
// HeaderMono. They travel to the hub with the message.
const (
	// HeaderBootID is the gateway's boot id at capture.
	HeaderBootID = "Leafbox-Boot-Id"
	// HeaderMono is the monotonic time since boot at capture, in
	// nanoseconds (decimal).
	HeaderMono = "Leafbox-Mono"
	// HeaderTime is the trusted wall-clock time at capture (RFC 3339, UTC,
	// nanoseconds); it is absent when the clock was not trusted.
	HeaderTime = "Leafbox-Time"
)

// DropAge is the Status.Dropped reason of messages expired by MaxAge.
const DropAge = "max_age"

// DefaultAgeInterval is how often the outbox looks for messages older
// than MaxAge (less when MaxAge/4 is shorter).
const DefaultAgeInterval = time.Second

// Clock stamps captured messages and tells their age; *clock.Clock
// implements it.
type Clock interface {
	// Stamp returns the boot id, monotonic time and, when trusted, the
	// wall-clock time of now.
	Stamp() clock.Stamp
}

// hasStamp reports whether hdr has a capture stamp header already.
func hasStamp(hdr []byte) bool {
	return len(hdr) > 0 && (proto.HasHeaderFold(hdr, HeaderBootID) || proto.HasHeaderFold(hdr, HeaderMono) || proto.HasHeaderFold(hdr, HeaderTime))
}

// appendStamp appends the header lines of the capture stamp s to add: the
// wall-clock time when the clock is trusted, else the boot id and
// monotonic time (enough to date the message later, from a trusted
// message of the same boot). Capture adds it unless the publisher stamped
// the message already (hasStamp).
func appendStamp(add []byte, s clock.Stamp) []byte {
	if s.Trusted {
		add = append(add, HeaderTime+": "...)
		add = s.Wall.UTC().AppendFormat(add, time.RFC3339Nano)
		add = append(add, "\r\n"...)
	} else {
		add = append(add, HeaderBootID+": "...)
		add = append(add, s.BootID...)
		add = append(add, "\r\n"...)
		add = append(add, HeaderMono+": "...)
		add = strconv.AppendInt(add, int64(s.Mono), 10)
		add = append(add, "\r\n"...)
	}
	return add
}

// headerValue returns the value of the first header line for name
// (ASCII case-insensitive) in the header block hdr, as a string.
func headerValue(hdr []byte, name string) (string, bool) {
	v, ok := proto.HeaderValueFold(hdr, name)
	return string(v), ok
}

// ageKind says how well a message's age is known.
type ageKind int

const (
	ageKnown      ageKind = iota // the age is known
	ageNotYet                    // known once the clock is trusted
	ageNeverKnown                // never known by its own stamp
)

// ageOf returns the age of m at now. A message of this boot is aged on
// the monotonic clock, whatever the wall clock did; one of an earlier boot
// by its trusted capture time, once the clock is trusted; one of an
// earlier boot captured untrusted, or without a stamp, has no known age.
// Without a clock (legacy) the store's timestamp and the wall clock age
// every message.
func (o *Outbox) ageOf(m *store.Msg, now clock.Stamp) (time.Duration, ageKind) {
	if o.cfg.Clock == nil {
		return now.Wall.Sub(time.Unix(0, m.Time)), ageKnown
	}
	boot, _ := headerValue(m.Header, HeaderBootID)
	if boot != "" && boot == now.BootID {
		if v, ok := headerValue(m.Header, HeaderMono); ok {
			if mono, err := strconv.ParseInt(v, 10, 64); err == nil {
				return now.Mono - time.Duration(mono), ageKnown
			}
		}
	}
	v, ok := headerValue(m.Header, HeaderTime)
	if !ok {
		return 0, ageNeverKnown
	}
	wall, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return 0, ageNeverKnown
	}
	if !now.Trusted {
		return 0, ageNotYet
	}
	return now.Wall.Sub(wall), ageKnown
}

// now returns the stamp ages are measured against.
func (o *Outbox) now() clock.Stamp {
	if o.cfg.Clock == nil {
		return clock.Stamp{Trusted: true, Wall: time.Now()}
	}
	return o.cfg.Clock.Stamp()
}

// expireAged removes the messages older than MaxAge and returns how many
// it removed. Messages are captured in sequence order, so a message known
// to be older than MaxAge proves every earlier one older too: the outbox
// removes everything below the newest message known to be too old,
// including earlier messages whose own age is unknown, and nothing else.
// The backlog thus always stays a suffix of what was captured, in order.
func (o *Outbox) expireAged() (uint64, error) {
	if o.cfg.MaxAge <= 0 {
		return 0, nil
	}
	now := o.now()
	// Messages at the head whose age cannot be known are skipped on later
	// scans: those never known at all, and, while the clock is untrusted,
	// those known only once it is.
	skip := &o.ageSkipTrusted
	start := o.ageSkipTrusted
	if !now.Trusted {
		skip = &o.ageSkipUntrusted
		start = max(start, o.ageSkipUntrusted)
	}
	start = max(start, o.stream.State().FirstSeq)
	var expireBelow uint64
	head := true // every message scanned so far had an unknown age
	var sm store.Msg
	for seq := start; ; {
		m, err := o.stream.LoadNext("", seq, &sm)
		if errors.Is(err, store.ErrNotFound) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("outbox: age: %w", err)
		}
		seq = m.Seq + 1
		age, kind := o.ageOf(m, now)
		if kind != ageKnown {
			if head && (kind == ageNeverKnown || !now.Trusted) {
				*skip = seq
			}
			continue
		}
		head = false
		if age < o.cfg.MaxAge {
			break
		}
		expireBelow = seq
	}
	if expireBelow == 0 {
		return 0, nil
	}
	n, err := o.stream.Purge(store.PurgeOptions{Sequence: expireBelow})
	o.aged.Add(n)
	o.rs.Changed()
	if err != nil {
		return n, fmt.Errorf("outbox: age: %w", err)
	}
	if n > 0 {
		o.log.Warn("uplink messages expired by max_age", "count", n,
			"max_age", o.cfg.MaxAge, "below_seq", expireBelow)
	}
	return n, nil
}

// oldestAge returns the age of the stream's first message, or 0 when it
// is empty or its age is unknown.
func (o *Outbox) oldestAge(st store.State) time.Duration {
	if st.Msgs == 0 {
		return 0
	}
	var sm store.Msg
	m, err := o.stream.LoadNext("", st.FirstSeq, &sm)
	if err != nil {
		return 0
	}
	age, kind := o.ageOf(m, o.now())
	if kind != ageKnown {
		return 0
	}
	return max(age, 0)
}

// ageLoop expires aged messages periodically until ctx ends.
func (o *Outbox) ageLoop(ctx context.Context) {
	defer close(o.ageDone)
	every := min(DefaultAgeInterval, max(o.cfg.MaxAge/4, time.Millisecond))
	if o.cfg.AgeInterval > 0 {
		every = o.cfg.AgeInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := o.expireAged(); err != nil {
			o.rs.SetError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
