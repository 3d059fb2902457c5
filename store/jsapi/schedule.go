package jsapi

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// Headers of message schedules (allow_msg_schedules). A schedule is a
// message whose Nats-Schedule header holds a pattern; when it is due the
// stream stores a copy of it (or of the last message on
// Nats-Schedule-Source) at Nats-Schedule-Target, with the schedule's
// headers removed and Nats-Scheduler and Nats-Schedule-Next added.
const (
	// HeaderSchedule is the pattern: "@at <RFC 3339>" (once),
	// "@every <Go duration of at least 1s>", a six-field cron expression
	// (seconds first) or one of @yearly, @annually, @monthly, @weekly,
	// @daily, @midnight and @hourly.
	HeaderSchedule = "Nats-Schedule"
	// HeaderScheduleTimeZone is the IANA zone cron patterns are read
	// in (UTC by default); it is refused with @at and @every.
	HeaderScheduleTimeZone = "Nats-Schedule-Time-Zone"
	// HeaderScheduleTTL is the Nats-TTL the produced messages get.
	HeaderScheduleTTL = "Nats-Schedule-TTL"
	// HeaderScheduleRollup, when "sub", makes each produced message roll
	// up its subject.
	HeaderScheduleRollup = "Nats-Schedule-Rollup"
	// HeaderScheduleTarget is the subject produced messages are stored
	// on: one of the stream's, not the schedule's own.
	HeaderScheduleTarget = "Nats-Schedule-Target"
	// HeaderScheduleSource names a subject whose last message is
	// produced instead of the schedule's own body and headers.
	HeaderScheduleSource = "Nats-Schedule-Source"
	// HeaderScheduler is the schedule's subject, on produced messages.
	// A client may send it only with HeaderScheduleNext "purge", to
	// cancel that schedule.
	HeaderScheduler = "Nats-Scheduler"
	// HeaderScheduleNext is, on produced messages, when the schedule
	// fires next (RFC 3339 with nanoseconds, UTC) or ScheduleNextPurge for
	// a schedule that fired for the last time.
	HeaderScheduleNext = "Nats-Schedule-Next"
)

// ScheduleNextPurge is the HeaderScheduleNext value of a schedule's last
// message: storing it removes the schedule.
const ScheduleNextPurge = "purge"

// ScheduleLocation returns the zone of a schedule's HeaderScheduleTimeZone
// value (nil, nil when the header is absent, v nil); an empty or unknown
// zone is 10223.
func ScheduleLocation(v []byte) (*time.Location, *APIError) {
	if v == nil {
		return nil, nil
	}
	if len(v) == 0 {
		return nil, NewMessageSchedulesTimeZoneInvalidError()
	}
	loc, err := time.LoadLocation(string(v))
	if err != nil {
		return nil, NewMessageSchedulesTimeZoneInvalidError()
	}
	return loc, nil
}

// ParseSchedule reads a HeaderSchedule pattern as nats-server does and
// returns when it fires next after ts (Unix ns: the schedule's store
// time, or the time it last fired), whether it repeats, and whether the
// pattern is valid. An empty pattern is valid and never fires (zero
// time). A repeating schedule that would be due before now (after a
// restart, say) fires once, one interval after now, rather than catching
// up. loc is the HeaderScheduleTimeZone, nil for none.
func ParseSchedule(pattern string, loc *time.Location, ts int64, now time.Time) (time.Time, bool, bool) {
	if pattern == "" {
		return time.Time{}, false, true
	}
	if at, ok := strings.CutPrefix(pattern, "@at "); ok {
		if loc != nil {
			return time.Time{}, false, false
		}
		t, err := time.Parse(time.RFC3339, at)
		return t, false, err == nil
	}
	if every, ok := strings.CutPrefix(pattern, "@every "); ok {
		d, err := time.ParseDuration(every)
		if loc != nil || err != nil || d < time.Second {
			return time.Time{}, false, false
		}
		next := time.Unix(0, ts).UTC().Round(time.Second).Add(d)
		if now = now.UTC(); next.Before(now) {
			next = now.Round(time.Second).Add(d)
		}
		return next, true, true
	}
	if p, ok := cronShorthands[pattern]; ok {
		pattern = p
	}
	c, err := parseCron(pattern)
	if err != nil {
		return time.Time{}, false, false
	}
	if loc == nil {
		loc = time.UTC
	}
	next, ok := c.next(time.Unix(0, ts).In(loc))
	if ok && next.Before(now) {
		next, ok = c.next(now.Round(time.Second).In(loc))
	}
	if !ok {
		return time.Time{}, false, false
	}
	return next.UTC(), true, true
}

var cronShorthands = map[string]string{
	"@yearly":   "0 0 0 1 1 *",
	"@annually": "0 0 0 1 1 *",
	"@monthly":  "0 0 0 1 * *",
	"@weekly":   "0 0 0 * * 0",
	"@daily":    "0 0 0 * * *",
	"@midnight": "0 0 0 * * *",
	"@hourly":   "0 0 * * * *",
}

// cron is a parsed six-field cron expression: a bit set per field (bit i
// for value i) and whether the day fields were given as "*" or "?"
// (which makes the two day fields both apply, else either one).
type cron struct {
	sec, min, hour, dom, month, dow uint64
	domAny, dowAny                  bool
}

// cronField is the range of one field and its names, if any.
type cronField struct {
	lo, hi uint
	names  []string // names[i] is value lo+i
}

var cronFields = [6]cronField{
	{0, 59, nil}, {0, 59, nil}, {0, 23, nil}, {1, 31, nil},
	{1, 12, []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	{0, 6, []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// parseCron parses "sec min hour day-of-month month day-of-week", each a
// comma list of "*", "?", "n", "n-m", with an optional "/step" ("n/step"
// runs to the field's maximum); months and weekdays may be named.
func parseCron(pattern string) (cron, error) {
	f := strings.Fields(pattern)
	if len(f) != 6 {
		return cron{}, errors.New("cron: six fields required")
	}
	var c cron
	dst := [6]*uint64{&c.sec, &c.min, &c.hour, &c.dom, &c.month, &c.dow}
	for i, field := range f {
		for part := range strings.SplitSeq(field, ",") {
			bits, any, err := cronFields[i].parse(part)
			if err != nil {
				return cron{}, err
			}
			*dst[i] |= bits
			switch {
			case i == 3 && any:
				c.domAny = true
			case i == 5 && any:
				c.dowAny = true
			}
		}
	}
	return c, nil
}

// parse reads one comma-separated part of a field. any reports a "*" or
// "?" without a step above 1.
func (f cronField) parse(part string) (bits uint64, any bool, err error) {
	rng, stepStr, hasStep := strings.Cut(part, "/")
	if strings.Count(stepStr, "/") > 0 {
		return 0, false, errors.New("cron: too many slashes")
	}
	step := uint(1)
	if hasStep {
		if step, err = f.number(stepStr, false); err != nil {
			return 0, false, err
		}
		if step == 0 {
			return 0, false, errors.New("cron: zero step")
		}
	}
	var lo, hi uint
	if rng == "*" || rng == "?" {
		lo, hi, any = f.lo, f.hi, step == 1
	} else {
		a, b, isRange := strings.Cut(rng, "-")
		if strings.Contains(b, "-") {
			return 0, false, errors.New("cron: too many hyphens")
		}
		if lo, err = f.number(a, true); err != nil {
			return 0, false, err
		}
		hi = lo
		switch {
		case isRange:
			if hi, err = f.number(b, true); err != nil {
				return 0, false, err
			}
		case hasStep:
			hi = f.hi
		}
	}
	if lo < f.lo || hi > f.hi || lo > hi {
		return 0, false, errors.New("cron: value out of range")
	}
	for v := lo; v <= hi; v += step {
		bits |= 1 << v
	}
	return bits, any, nil
}

// number reads a non-negative integer or, when named, a field name.
func (f cronField) number(s string, named bool) (uint, error) {
	if named {
		for i, n := range f.names {
			if strings.EqualFold(s, n) {
				return f.lo + uint(i), nil
			}
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, errors.New("cron: bad number " + strconv.Quote(s))
	}
	return uint(n), nil
}

// dayOK reports whether t's day matches the day fields.
func (c *cron) dayOK(t time.Time) bool {
	d := c.dom&(1<<uint(t.Day())) != 0
	w := c.dow&(1<<uint(t.Weekday())) != 0
	if c.domAny || c.dowAny {
		return d && w
	}
	return d || w
}

// next returns the first whole second after t (in t's zone) that matches,
// searching five years ahead.
func (c *cron) next(t time.Time) (time.Time, bool) {
	loc := t.Location()
	t = t.Truncate(time.Second).Add(time.Second)
	limit := t.Year() + 5
	for t.Year() <= limit {
		switch {
		case c.month&(1<<uint(t.Month())) == 0:
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, loc)
		case !c.dayOK(t):
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, loc)
		case c.hour&(1<<uint(t.Hour())) == 0:
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), 0, 0, 0, loc).Add(time.Hour)
		case c.min&(1<<uint(t.Minute())) == 0:
			t = t.Truncate(time.Minute).Add(time.Minute)
		case c.sec&(1<<uint(t.Second())) == 0:
			t = t.Add(time.Second)
		default:
			return t, true
		}
	}
	return time.Time{}, false
}
