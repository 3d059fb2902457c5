package jetstream

import (
	"bytes"
	"slices"
	"time"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Message schedules (allow_msg_schedules), as nats-server implements
// them. A schedule is a stored message with a Nats-Schedule pattern; the
// stream keeps, per schedule subject, the schedule's sequence and when it
// is due, and one timer for the earliest. When it fires the stream stores
// the produced message on Nats-Schedule-Target as if published, with
// Nats-Scheduler (the schedule's subject) and Nats-Schedule-Next (the next
// time, or "purge" for a one-shot @at, whose storing purges the schedule).
// A new schedule on a subject replaces the old one (schedules are stored
// with Nats-Rollup: sub), and a plain message on it cancels it. The state
// is rebuilt from the stored messages when the stream opens.

// schedules is a stream's schedule state; guarded by the stream's mu.
type schedules struct {
	bySubj map[string]*schedule
	timer  *time.Timer
}

type schedule struct {
	seq uint64
	due int64 // Unix ns
	// fired is set while a produced message is on its way, so that the
	// schedule does not fire again before it is stored.
	fired bool
}

// checkScheduleLocked checks a client's schedule headers in nats-server's
// order and returns hdr with Nats-Rollup: sub added to a schedule that has
// none, and whether the message is a schedule. Messages a source copied
// in, or the stream produced, are not checked. batch, for a message of an
// atomic batch being committed, maps each subject written earlier in the
// batch to whether its latest message there is a schedule: a cancel
// (Nats-Scheduler) must name a schedule, and the batch's own messages
// come before the stored ones. Caller holds s.mu.
func (s *stream) checkScheduleLocked(subj string, hdr []byte, sourced bool, batch map[string]bool) ([]byte, bool, *jsapi.APIError) {
	if sourced {
		return hdr, false, nil
	}
	cfg := &s.cfg
	allowed := cfg.AllowMsgSchedules
	isSchedule := false
	pattern := proto.HeaderValue(hdr, jsapi.HeaderSchedule)
	tz := proto.HeaderValue(hdr, jsapi.HeaderScheduleTimeZone)
	if len(pattern) > 0 || tz != nil {
		loc, apiErr := jsapi.ScheduleLocation(tz)
		var next time.Time
		if apiErr == nil {
			var ok bool
			now := time.Now()
			if next, _, ok = jsapi.ParseSchedule(string(pattern), loc, now.UnixNano(), now); !ok {
				apiErr = jsapi.NewMessageSchedulesPatternInvalidError()
			}
		}
		switch {
		case apiErr != nil && !allowed:
			return nil, false, jsapi.NewMessageSchedulesDisabledError()
		case apiErr != nil:
			return nil, false, apiErr
		case !next.IsZero():
			var err *jsapi.APIError
			if hdr, err = s.checkNewSchedule(subj, hdr); err != nil {
				return nil, false, err
			}
			isSchedule = true
		}
	}
	if next := proto.HeaderValue(hdr, jsapi.HeaderScheduleNext); len(next) > 0 {
		// A client may only cancel a schedule: "purge" with the
		// schedule's subject in Nats-Scheduler.
		sched := string(proto.HeaderValue(hdr, jsapi.HeaderScheduler))
		switch {
		case string(next) != jsapi.ScheduleNextPurge, sched == "", sched == subj, !subject.ValidLiteral(sched):
			return nil, false, jsapi.NewMessageSchedulesSchedulerInvalidError()
		case !allowed:
			return nil, false, jsapi.NewMessageSchedulesDisabledError()
		}
		if staged, ok := batch[sched]; ok {
			if !staged {
				return nil, false, jsapi.NewMessageSchedulesSchedulerInvalidError()
			}
		} else {
			var sm store.Msg
			if m, err := s.store.LoadLast(sched, &sm); err == nil && m != nil && len(proto.HeaderValue(m.Header, jsapi.HeaderSchedule)) == 0 {
				return nil, false, jsapi.NewMessageSchedulesSchedulerInvalidError()
			}
		}
	} else if len(proto.HeaderValue(hdr, jsapi.HeaderScheduler)) > 0 {
		return nil, false, jsapi.NewMessageSchedulesSchedulerInvalidError()
	}
	return hdr, isSchedule, nil
}

// checkNewSchedule checks the rest of a message with a valid pattern.
func (s *stream) checkNewSchedule(subj string, hdr []byte) ([]byte, *jsapi.APIError) {
	cfg := &s.cfg
	if !cfg.AllowMsgSchedules {
		return nil, jsapi.NewMessageSchedulesDisabledError()
	}
	ttl := proto.HeaderValue(hdr, jsapi.HeaderScheduleTTL)
	if len(ttl) > 0 {
		if _, err := jsapi.ParseTTL(string(ttl)); err != nil {
			return nil, jsapi.NewMessageSchedulesTTLInvalidError()
		}
	}
	if r := proto.HeaderValue(hdr, jsapi.HeaderScheduleRollup); len(r) > 0 && string(r) != jsapi.RollupSubject {
		return nil, jsapi.NewMessageSchedulesRollupInvalidError()
	}
	if len(ttl) > 0 && !cfg.AllowMsgTTL {
		return nil, jsapi.NewMessageTTLDisabledError()
	}
	target := string(proto.HeaderValue(hdr, jsapi.HeaderScheduleTarget))
	if target == "" || !subject.ValidLiteral(target) || target == subj {
		return nil, jsapi.NewMessageSchedulesTargetInvalidError()
	}
	source := string(proto.HeaderValue(hdr, jsapi.HeaderScheduleSource))
	if source != "" && (source == target || source == subj || !subject.ValidLiteral(source)) {
		return nil, jsapi.NewMessageSchedulesSourceInvalidError()
	}
	if !overlaps(cfg.Subjects, []string{target}) {
		return nil, jsapi.NewMessageSchedulesTargetInvalidError()
	}
	if source != "" && !overlaps(cfg.Subjects, []string{source}) {
		return nil, jsapi.NewMessageSchedulesSourceInvalidError()
	}
	switch r := proto.HeaderValue(hdr, jsapi.HeaderRollup); {
	case len(r) == 0:
		// A newer schedule on the subject replaces the older one.
		hdr = proto.AppendHeader(nil, hdr, jsapi.HeaderRollup, jsapi.RollupSubject)
	case !bytes.EqualFold(r, []byte(jsapi.RollupSubject)):
		return nil, jsapi.NewMessageSchedulesRollupInvalidError()
	}
	return hdr, nil
}

// scheduleStoredLocked does the schedule work after a message was stored
// at seq (time ts), a publish's or one of a committed atomic batch: the
// schedules are updated (noteScheduleLocked) and a cancel, on a stream
// that may purge, removes its schedule (purgeScheduleLocked). It reports
// whether messages were removed. Caller holds s.mu.
func (s *stream) scheduleStoredLocked(seq uint64, subj string, hdr []byte, ts int64) bool {
	s.noteScheduleLocked(seq, subj, hdr, ts)
	return s.cfg.AllowRollup && !s.cfg.DenyPurge && len(hdr) > 0 && s.purgeScheduleLocked(hdr)
}

// noteScheduleLocked updates the schedules after a message was stored at
// seq (time ts): a schedule is added or replaced, a plain message on a
// schedule's subject cancels it, and a produced message moves its
// schedule to the next time. Caller holds s.mu.
func (s *stream) noteScheduleLocked(seq uint64, subj string, hdr []byte, ts int64) {
	if !s.cfg.AllowMsgSchedules {
		return
	}
	s.trackScheduleLocked(seq, subj, hdr, ts, time.Now())
	s.armSchedulesLocked()
}

// trackScheduleLocked is noteScheduleLocked without arming the timer.
func (s *stream) trackScheduleLocked(seq uint64, subj string, hdr []byte, ts int64, now time.Time) {
	sc := &s.sched
	if next, ok := nextSchedule(hdr, ts, now); ok {
		if sc.bySubj == nil {
			sc.bySubj = make(map[string]*schedule)
		}
		sc.bySubj[subj] = &schedule{seq: seq, due: next.UnixNano()}
	} else if len(proto.HeaderValue(hdr, jsapi.HeaderScheduler)) == 0 {
		delete(sc.bySubj, subj)
	}
	if next := proto.HeaderValue(hdr, jsapi.HeaderScheduleNext); len(next) > 0 && string(next) != jsapi.ScheduleNextPurge {
		sched := proto.HeaderValue(hdr, jsapi.HeaderScheduler)
		if t, err := time.Parse(time.RFC3339Nano, string(next)); err == nil && len(sched) > 0 {
			if e := sc.bySubj[string(sched)]; e != nil {
				e.due, e.fired = t.UnixNano(), false
			}
		}
	}
}

// nextSchedule returns when the schedule in hdr, stored at ts, is due.
func nextSchedule(hdr []byte, ts int64, now time.Time) (time.Time, bool) {
	pattern := proto.HeaderValue(hdr, jsapi.HeaderSchedule)
	if len(pattern) == 0 {
		return time.Time{}, false
	}
	loc, apiErr := jsapi.ScheduleLocation(proto.HeaderValue(hdr, jsapi.HeaderScheduleTimeZone))
	if apiErr != nil {
		return time.Time{}, false
	}
	next, _, ok := jsapi.ParseSchedule(string(pattern), loc, ts, now)
	return next, ok && !next.IsZero()
}

// purgeScheduleLocked runs after a produced message with
// Nats-Schedule-Next "purge" (or a client's cancel) was stored: it
// removes the schedule's messages. It reports whether any went. Caller
// holds s.mu.
func (s *stream) purgeScheduleLocked(hdr []byte) bool {
	if next := proto.HeaderValue(hdr, jsapi.HeaderScheduleNext); string(next) != jsapi.ScheduleNextPurge {
		return false
	}
	sched := string(proto.HeaderValue(hdr, jsapi.HeaderScheduler))
	if sched == "" {
		return false
	}
	delete(s.sched.bySubj, sched)
	n, _ := s.store.Purge(store.PurgeOptions{Subject: sched})
	return n > 0
}

// restoreSchedulesLocked rebuilds the schedules from the stored messages,
// replaying them in order with the rules of noteScheduleLocked. Caller
// holds s.mu (or owns the stream before it is shared).
func (s *stream) restoreSchedulesLocked() {
	s.sched.bySubj = nil
	now := time.Now()
	var sm store.Msg
	for seq := uint64(0); ; {
		m, err := s.store.LoadNext("", seq, &sm)
		if err != nil {
			break
		}
		s.trackScheduleLocked(m.Seq, m.Subject, m.Header, m.Time, now)
		seq = m.Seq + 1
	}
	s.armSchedulesLocked()
}

// armSchedulesLocked sets the timer for the earliest schedule not yet
// fired, or stops it. Caller holds s.mu.
func (s *stream) armSchedulesLocked() {
	sc := &s.sched
	first := int64(-1)
	for _, e := range sc.bySubj {
		if !e.fired && (first < 0 || e.due < first) {
			first = e.due
		}
	}
	if first < 0 || s.closed {
		if sc.timer != nil {
			sc.timer.Stop()
		}
		return
	}
	d := time.Until(time.Unix(0, first))
	if sc.timer == nil {
		sc.timer = time.AfterFunc(d, s.runSchedules)
	} else {
		sc.timer.Reset(d)
	}
}

// stopSchedulesLocked stops the timer. Caller holds s.mu.
func (s *stream) stopSchedulesLocked() {
	if s.sched.timer != nil {
		s.sched.timer.Stop()
	}
}

// produced is a message a schedule produces.
type produced struct {
	seq       uint64
	subj      string
	hdr, data []byte
}

// runSchedules is the timer's function: it stores the messages of every
// due schedule, in schedule order, and re-arms the timer.
func (s *stream) runSchedules() {
	now := time.Now()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	due := s.dueSchedulesLocked(now)
	s.mu.Unlock()
	for _, p := range due {
		if apiErr := s.storeProduced(p); apiErr != nil {
			// As in nats-server the schedule stays fired (it does not
			// retry) until the stream is next opened.
			s.eng.log.Warn("jetstream: scheduled message not stored", "stream", s.name, "subject", p.subj, "error", apiErr.Error())
		}
	}
	s.mu.Lock()
	if !s.closed {
		s.armSchedulesLocked()
	}
	s.mu.Unlock()
}

// storeProduced stores a produced message as a publish without reply.
func (s *stream) storeProduced(p produced) *jsapi.APIError {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	res, apiErr := s.storeMsgLocked(p.subj, p.hdr, p.data, true)
	s.mu.Unlock()
	if apiErr == nil && !res.duplicate && res.rp.dest != "" {
		s.republish(&res.rp, p.hdr, p.data)
	}
	return apiErr
}

// dueSchedulesLocked builds the messages of the schedules due at now and
// marks them fired; schedules whose message is gone or no longer valid
// are dropped. Caller holds s.mu.
func (s *stream) dueSchedulesLocked(now time.Time) []produced {
	var out []produced
	var sm, src store.Msg
	for subj, e := range s.sched.bySubj {
		if e.fired || e.due > now.UnixNano() {
			continue
		}
		m, err := s.store.Load(e.seq, &sm)
		if err != nil || m.Subject != subj {
			delete(s.sched.bySubj, subj)
			continue
		}
		hdr := m.Header
		pattern := string(proto.HeaderValue(hdr, jsapi.HeaderSchedule))
		loc, apiErr := jsapi.ScheduleLocation(proto.HeaderValue(hdr, jsapi.HeaderScheduleTimeZone))
		next, repeat, ok := jsapi.ParseSchedule(pattern, loc, e.due, now)
		ttl := string(proto.HeaderValue(hdr, jsapi.HeaderScheduleTTL))
		if ttl != "" {
			if _, terr := jsapi.ParseTTL(ttl); terr != nil {
				ok = false
			}
		}
		target := string(proto.HeaderValue(hdr, jsapi.HeaderScheduleTarget))
		if pattern == "" || apiErr != nil || !ok || target == "" {
			delete(s.sched.bySubj, subj)
			continue
		}
		rollup := string(proto.HeaderValue(hdr, jsapi.HeaderScheduleRollup))
		body := m.Data
		if source := string(proto.HeaderValue(hdr, jsapi.HeaderScheduleSource)); source != "" {
			if l, err := s.store.LoadLast(source, &src); err == nil && l != nil {
				hdr, body = l.Header, l.Data
			}
		}
		h := stripScheduleHeaders(hdr)
		var fields []byte
		fields = proto.AppendHeaderField(fields, jsapi.HeaderScheduler, subj)
		if repeat {
			fields = proto.AppendHeaderField(fields, jsapi.HeaderScheduleNext, next.UTC().Format(time.RFC3339Nano))
		} else {
			fields = proto.AppendHeaderField(fields, jsapi.HeaderScheduleNext, jsapi.ScheduleNextPurge)
		}
		if ttl != "" {
			fields = proto.AppendHeaderField(fields, jsapi.HeaderTTL, ttl)
		}
		if rollup != "" {
			fields = proto.AppendHeaderField(fields, jsapi.HeaderRollup, rollup)
		}
		out = append(out, produced{seq: e.seq, subj: target, hdr: proto.AppendHeaderFields(nil, h, fields), data: bytes.Clone(body)})
		e.fired = true
	}
	slices.SortFunc(out, func(a, b produced) int {
		switch {
		case a.seq < b.seq:
			return -1
		case a.seq > b.seq:
			return 1
		}
		return 0
	})
	return out
}

// stripScheduleHeaders drops from a schedule's headers what the produced
// message must not carry, matching names by case as nats-server does:
// Nats-Schedule* (Nats-Scheduler too), Nats-Expected-*, Nats-Msg-Id,
// Nats-TTL and Nats-Rollup.
func stripScheduleHeaders(hdr []byte) []byte {
	if len(hdr) == 0 {
		return nil
	}
	return proto.DeleteHeaders(hdr, func(name []byte) bool {
		return bytes.HasPrefix(name, []byte(jsapi.HeaderSchedule)) || bytes.HasPrefix(name, []byte("Nats-Expected-")) ||
			string(name) == jsapi.HeaderMsgID || string(name) == jsapi.HeaderTTL || string(name) == jsapi.HeaderRollup
	})
}
