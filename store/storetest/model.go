package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store"
)

// errAny stands for "some error" in the model, for failures store.go has no
// sentinel for (an invalid subject).
var errAny = errors.New("storetest: any error")

// refMsg is a message held by the reference model.
type refMsg struct {
	seq       uint64
	subject   string
	hdr, data []byte
	ts        int64
}

func (m *refMsg) size() uint64 { return store.Size(m.subject, m.hdr, m.data) }

// refStream is the naive reference model of a stream: a slice of live
// messages and the obvious loops over it. It is the executable form of the
// semantics the suite's cases describe, and deliberately simple.
type refStream struct {
	cfg         store.Config
	msgs        []refMsg // live messages in sequence order
	first, last uint64
	lastTime    int64
}

func (r *refStream) bytes() uint64 {
	var n uint64
	for i := range r.msgs {
		n += r.msgs[i].size()
	}
	return n
}

func (r *refStream) count(subj string) uint64 {
	var n uint64
	for i := range r.msgs {
		if r.msgs[i].subject == subj {
			n++
		}
	}
	return n
}

func matchFilter(filter, subj string) bool {
	return filter == "" || filter == ">" || subject.Match(filter, subj)
}

func validConfig(cfg store.Config) bool {
	return cfg.MaxMsgs >= 0 && cfg.MaxBytes >= 0 && cfg.MaxAge >= 0 && cfg.MaxMsgsPerSubject >= 0 &&
		cfg.MaxMsgSize >= 0 && (cfg.Discard == store.DiscardOld || cfg.Discard == store.DiscardNew)
}

// storeErr is the error Store must return for this message, or nil.
func (r *refStream) storeErr(subj string, hdr, data []byte) error {
	cfg := r.cfg
	if !subject.ValidLiteral(subj) {
		return errAny
	}
	if cfg.MaxMsgSize > 0 && len(hdr)+len(data) > int(cfg.MaxMsgSize) {
		return store.ErrMaxMsgSize
	}
	size := store.Size(subj, hdr, data)
	if cfg.Discard == store.DiscardOld {
		if cfg.MaxBytes > 0 && size > uint64(cfg.MaxBytes) {
			return store.ErrMaxBytes
		}
		return nil
	}
	atLimit := cfg.MaxMsgsPerSubject > 0 && r.count(subj) >= uint64(cfg.MaxMsgsPerSubject)
	if atLimit && cfg.DiscardNewPerSubject {
		return store.ErrMaxMsgsPerSubject
	}
	if cfg.MaxMsgs > 0 && !atLimit && uint64(len(r.msgs)) >= uint64(cfg.MaxMsgs) {
		return store.ErrMaxMsgs
	}
	if cfg.MaxBytes > 0 {
		total := r.bytes() + size
		if atLimit {
			for i := range r.msgs {
				if r.msgs[i].subject == subj {
					total -= r.msgs[i].size()
					break
				}
			}
		}
		if total > uint64(cfg.MaxBytes) {
			return store.ErrMaxBytes
		}
	}
	return nil
}

// store records a message the engine accepted with sequence seq at ts.
func (r *refStream) store(seq uint64, ts int64, subj string, hdr, data []byte) {
	r.msgs = append(r.msgs, refMsg{seq, subj, slices.Clone(hdr), slices.Clone(data), ts})
	r.last, r.lastTime = seq, ts
	r.enforce()
	r.fixFirst()
}

// enforce applies the limits: per subject, then (under DiscardOld) MaxMsgs
// and MaxBytes. It reports whether it removed anything.
func (r *refStream) enforce() bool {
	n := len(r.msgs)
	if per := uint64(r.cfg.MaxMsgsPerSubject); per > 0 {
		for _, subj := range r.subjects() {
			for r.count(subj) > per {
				i := slices.IndexFunc(r.msgs, func(m refMsg) bool { return m.subject == subj })
				r.msgs = slices.Delete(r.msgs, i, i+1)
			}
		}
	}
	if r.cfg.Discard == store.DiscardOld {
		for r.cfg.MaxMsgs > 0 && uint64(len(r.msgs)) > uint64(r.cfg.MaxMsgs) {
			r.msgs = r.msgs[1:]
		}
		for r.cfg.MaxBytes > 0 && r.bytes() > uint64(r.cfg.MaxBytes) {
			r.msgs = r.msgs[1:]
		}
	}
	return len(r.msgs) != n
}

func (r *refStream) subjects() []string {
	var out []string
	for i := range r.msgs {
		if !slices.Contains(out, r.msgs[i].subject) {
			out = append(out, r.msgs[i].subject)
		}
	}
	return out
}

func (r *refStream) fixFirst() {
	if len(r.msgs) == 0 {
		r.first = r.last + 1
	} else {
		r.first = r.msgs[0].seq
	}
}

func (r *refStream) remove(seq uint64) bool {
	i := slices.IndexFunc(r.msgs, func(m refMsg) bool { return m.seq == seq })
	if i < 0 {
		return false
	}
	r.msgs = slices.Delete(r.msgs, i, i+1)
	r.fixFirst()
	return true
}

func (r *refStream) purge(opts store.PurgeOptions) uint64 {
	if opts.Sequence == 1 {
		return 0
	}
	all := opts.Subject == "" || opts.Subject == ">"
	if all && opts.Keep == 0 {
		n := uint64(0)
		if opts.Sequence == 0 || opts.Sequence > r.last {
			n = uint64(len(r.msgs))
			r.msgs = nil
			if opts.Sequence > r.last {
				r.last = opts.Sequence - 1
			}
			r.fixFirst()
			return n
		}
		for len(r.msgs) > 0 && r.msgs[0].seq < opts.Sequence {
			r.msgs = r.msgs[1:]
			n++
		}
		r.fixFirst()
		return n
	}
	var total uint64
	for i := range r.msgs {
		if matchFilter(opts.Subject, r.msgs[i].subject) {
			total++
		}
	}
	if opts.Keep >= total {
		return 0
	}
	limit, n := total-opts.Keep, uint64(0)
	r.msgs = slices.DeleteFunc(r.msgs, func(m refMsg) bool {
		if n < limit && matchFilter(opts.Subject, m.subject) && (opts.Sequence == 0 || m.seq < opts.Sequence) {
			n++
			return true
		}
		return false
	})
	if n > 0 {
		r.fixFirst()
	}
	return n
}

func (r *refStream) state() store.State {
	st := store.State{
		Msgs:        uint64(len(r.msgs)),
		Bytes:       r.bytes(),
		FirstSeq:    r.first,
		LastSeq:     r.last,
		NumSubjects: len(r.subjects()),
	}
	if len(r.msgs) > 0 {
		st.NumDeleted = int(r.last - r.first + 1 - uint64(len(r.msgs)))
	}
	return st
}

func (r *refStream) firstTime() int64 {
	if len(r.msgs) == 0 {
		return 0
	}
	return r.msgs[0].ts
}

// load returns the message seq and the error Load must return.
func (r *refStream) load(seq uint64) (*refMsg, error) {
	if seq == 0 || seq > r.last {
		return nil, store.ErrNotFound
	}
	for i := range r.msgs {
		if r.msgs[i].seq == seq {
			return &r.msgs[i], nil
		}
	}
	return nil, store.ErrDeleted
}

func (r *refStream) loadNext(filter string, start uint64) *refMsg {
	for i := range r.msgs {
		if m := &r.msgs[i]; m.seq >= start && matchFilter(filter, m.subject) {
			return m
		}
	}
	return nil
}

func (r *refStream) loadLast(filter string) *refMsg {
	for i := len(r.msgs) - 1; i >= 0; i-- {
		if m := &r.msgs[i]; matchFilter(filter, m.subject) {
			return m
		}
	}
	return nil
}

func (r *refStream) filteredState(filter string, from uint64) store.FilteredState {
	var fs store.FilteredState
	for i := range r.msgs {
		if m := &r.msgs[i]; m.seq >= from && matchFilter(filter, m.subject) {
			if fs.Msgs == 0 {
				fs.First = m.seq
			}
			fs.Msgs++
			fs.Last = m.seq
		}
	}
	return fs
}

func (r *refStream) subjectsState(filter string) map[string]uint64 {
	out := map[string]uint64{}
	for i := range r.msgs {
		if matchFilter(filter, r.msgs[i].subject) {
			out[r.msgs[i].subject]++
		}
	}
	return out
}

// Pools the random operations draw from.
var (
	modelSubjects = []string{"a", "b.c", "b.d", "d.e.f", "d.e.g", "h", "h"}
	modelFilters  = []string{"", ">", "a", "b.c", "b.*", "b.>", "*", "*.c", "d.e.f", "d.>", "*.*.f", "x", "h"}
	modelInvalid  = []string{"", "b.*", "d.>", "a..b"}
)

// modelRun holds one model test's state.
type modelRun struct {
	t       *testing.T
	rng     *rand.Rand
	s       store.Stream
	ref     refStream
	history []string
}

// RunModelTest runs a random sequence of operations, chosen by seed, against
// a stream open builds and against a naive reference model (an in-test
// slice of messages), and fails at the first difference in a result, an
// error or the State. Limits are drawn small so that eviction, DiscardNew
// errors and purges happen often; time-based limits are left out, as the
// model has no clock.
func RunModelTest(t *testing.T, open OpenStream, seed int64) {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6c656166626f78))
	m := &modelRun{t: t, rng: rng}
	m.ref.cfg = m.randomConfig()
	m.s = open(t, m.ref.cfg)
	m.logf("open %+v", m.ref.cfg)
	ops := 3000
	if testing.Short() {
		ops = 600
	}
	for range ops {
		m.step()
		m.checkState()
	}
	m.checkAll()
}

func (m *modelRun) logf(format string, args ...any) {
	m.history = append(m.history, fmt.Sprintf(format, args...))
}

// fatalf fails the test, printing the last operations.
func (m *modelRun) fatalf(format string, args ...any) {
	m.t.Helper()
	from := max(0, len(m.history)-40)
	m.t.Fatalf("%s\nlast operations (of %d):\n  %s", fmt.Sprintf(format, args...), len(m.history),
		strings.Join(m.history[from:], "\n  "))
}

func pick[T any](rng *rand.Rand, xs ...T) T { return xs[rng.IntN(len(xs))] }

func (m *modelRun) randomConfig() store.Config {
	cfg := store.Config{
		Name:              "model",
		MaxMsgs:           pick[int64](m.rng, 0, 0, 3, 8, 20),
		MaxBytes:          pick[int64](m.rng, 0, 0, 150, 400, 1000),
		MaxMsgsPerSubject: pick[int64](m.rng, 0, 0, 1, 2, 5),
		MaxMsgSize:        pick[int32](m.rng, 0, 0, 24),
		Discard:           pick(m.rng, store.DiscardOld, store.DiscardNew),
	}
	cfg.DiscardNewPerSubject = cfg.Discard == store.DiscardNew && m.rng.IntN(2) == 0
	return cfg
}

func (m *modelRun) randomBytes(max int) []byte {
	if m.rng.IntN(3) == 0 {
		return nil
	}
	b := make([]byte, m.rng.IntN(max+1))
	for i := range b {
		b[i] = byte('a' + m.rng.IntN(26))
	}
	return b
}

// randomSeq picks a sequence: mostly a live one, sometimes a gap, 0 or one
// past the end.
func (m *modelRun) randomSeq() uint64 {
	if len(m.ref.msgs) > 0 && m.rng.IntN(10) < 6 {
		return m.ref.msgs[m.rng.IntN(len(m.ref.msgs))].seq
	}
	return m.rng.Uint64N(m.ref.last + 3)
}

func (m *modelRun) step() {
	switch n := m.rng.IntN(100); {
	case n < 40:
		m.opStore()
	case n < 48:
		seq, erase := m.randomSeq(), m.rng.IntN(4) == 0
		m.logf("Remove(%d, %v)", seq, erase)
		ok, err := m.s.Remove(seq, erase)
		if want := m.ref.remove(seq); err != nil || ok != want {
			m.fatalf("Remove(%d): got %v, %v, want %v, nil", seq, ok, err, want)
		}
	case n < 51:
		m.opPurge()
	case n < 53:
		m.opUpdateConfig()
	case n < 63:
		m.checkLoad(m.randomSeq())
	case n < 75:
		filter, start := pick(m.rng, modelFilters...), m.randomSeq()
		m.logf("LoadNext(%q, %d)", filter, start)
		sm, err := m.s.LoadNext(filter, start, nil)
		m.compareMsg(fmt.Sprintf("LoadNext(%q, %d)", filter, start), sm, err, m.ref.loadNext(filter, start))
	case n < 83:
		filter := pick(m.rng, modelFilters...)
		m.logf("LoadLast(%q)", filter)
		sm, err := m.s.LoadLast(filter, nil)
		m.compareMsg(fmt.Sprintf("LoadLast(%q)", filter), sm, err, m.ref.loadLast(filter))
	case n < 91:
		filter, from := pick(m.rng, modelFilters...), m.randomSeq()
		m.logf("FilteredState(%q, %d)", filter, from)
		if got, want := m.s.FilteredState(filter, from), m.ref.filteredState(filter, from); got != want {
			m.fatalf("FilteredState(%q, %d): got %+v, want %+v", filter, from, got, want)
		}
	case n < 96:
		filter := pick(m.rng, modelFilters...)
		m.logf("SubjectsState(%q)", filter)
		got, want := m.s.SubjectsState(filter), m.ref.subjectsState(filter)
		if len(got) != len(want) || fmt.Sprint(got) != fmt.Sprint(want) {
			m.fatalf("SubjectsState(%q): got %v, want %v", filter, got, want)
		}
	default:
		m.checkAll()
	}
}

func (m *modelRun) opStore() {
	subj := pick(m.rng, modelSubjects...)
	if m.rng.IntN(50) == 0 {
		subj = pick(m.rng, modelInvalid...)
	}
	hdr, data := m.randomBytes(10), m.randomBytes(30)
	m.logf("Store(%q, %d+%d bytes)", subj, len(hdr), len(data))
	want := m.ref.storeErr(subj, hdr, data)
	seq, ts, err := m.s.Store(subj, hdr, data, 0)
	switch {
	case want == nil && err != nil:
		m.fatalf("Store(%q): unexpected error %v", subj, err)
	case want == nil && seq != m.ref.last+1:
		m.fatalf("Store(%q): got sequence %d, want %d", subj, seq, m.ref.last+1)
	case want == errAny && err == nil:
		m.fatalf("Store(%q): succeeded with sequence %d, want an error", subj, seq)
	case want != nil && want != errAny && !errors.Is(err, want):
		m.fatalf("Store(%q): got error %v, want %v", subj, err, want)
	}
	if want == nil {
		m.ref.store(seq, ts, subj, hdr, data)
	}
}

func (m *modelRun) opPurge() {
	var opts store.PurgeOptions
	if m.rng.IntN(2) == 0 {
		opts.Subject = pick(m.rng, modelFilters...)
	}
	switch m.rng.IntN(4) {
	case 0:
		opts.Keep = pick[uint64](m.rng, 1, 2, 5)
	case 1:
		opts.Sequence = m.rng.Uint64N(m.ref.last + 4)
	case 2:
		opts.Keep, opts.Sequence = pick[uint64](m.rng, 1, 3), m.rng.Uint64N(m.ref.last+4)
	}
	m.logf("Purge(%+v)", opts)
	n, err := m.s.Purge(opts)
	if want := m.ref.purge(opts); err != nil || n != want {
		m.fatalf("Purge(%+v): got %d, %v, want %d, nil", opts, n, err, want)
	}
}

func (m *modelRun) opUpdateConfig() {
	cfg := m.randomConfig()
	if m.rng.IntN(10) == 0 {
		cfg.MaxMsgs = -1
	}
	m.logf("UpdateConfig(%+v)", cfg)
	err := m.s.UpdateConfig(cfg)
	if !validConfig(cfg) {
		if !errors.Is(err, store.ErrInvalidConfig) {
			m.fatalf("UpdateConfig(%+v): got %v, want ErrInvalidConfig", cfg, err)
		}
		return
	}
	if err != nil {
		m.fatalf("UpdateConfig(%+v): %v", cfg, err)
	}
	m.ref.cfg = cfg
	if m.ref.enforce() {
		m.ref.fixFirst()
	}
}

func (m *modelRun) checkLoad(seq uint64) {
	m.t.Helper()
	sm, err := m.s.Load(seq, nil)
	want, wantErr := m.ref.load(seq)
	if wantErr != nil {
		if !errors.Is(err, wantErr) {
			m.fatalf("Load(%d): got %v, %v, want %v", seq, sm, err, wantErr)
		}
		return
	}
	m.compareMsg(fmt.Sprintf("Load(%d)", seq), sm, err, want)
}

func (m *modelRun) compareMsg(what string, sm *store.Msg, err error, want *refMsg) {
	m.t.Helper()
	if want == nil {
		if !errors.Is(err, store.ErrNotFound) {
			m.fatalf("%s: got %+v, %v, want ErrNotFound", what, sm, err)
		}
		return
	}
	if err != nil {
		m.fatalf("%s: got error %v, want sequence %d", what, err, want.seq)
	}
	if sm.Seq != want.seq || sm.Subject != want.subject || sm.Time != want.ts ||
		!bytes.Equal(sm.Header, want.hdr) || !bytes.Equal(sm.Data, want.data) {
		m.fatalf("%s: got seq=%d subject=%q time=%d header=%q data=%q, want seq=%d subject=%q time=%d header=%q data=%q",
			what, sm.Seq, sm.Subject, sm.Time, sm.Header, sm.Data, want.seq, want.subject, want.ts, want.hdr, want.data)
	}
}

func (m *modelRun) checkState() {
	m.t.Helper()
	got, want := m.s.State(), m.ref.state()
	firstTime, lastTime := got.FirstTime, got.LastTime
	got.FirstTime, got.LastTime = want.FirstTime, want.LastTime
	if got != want {
		m.fatalf("State: got %+v, want %+v", got, want)
	}
	if !sameTime(firstTime.IsZero(), firstTime.UnixNano(), m.ref.firstTime()) ||
		!sameTime(lastTime.IsZero(), lastTime.UnixNano(), m.ref.lastTime) {
		m.fatalf("State times: got first %v last %v, want first %d last %d", firstTime, lastTime, m.ref.firstTime(), m.ref.lastTime)
	}
}

func sameTime(isZero bool, got, want int64) bool {
	if want == 0 {
		return isZero
	}
	return !isZero && got == want
}

// checkAll compares every sequence and a LoadNext walk per filter.
func (m *modelRun) checkAll() {
	m.t.Helper()
	m.logf("check all")
	for seq := uint64(0); seq <= m.ref.last+1; seq++ {
		m.checkLoad(seq)
	}
	for _, filter := range modelFilters {
		var want []uint64
		for i := range m.ref.msgs {
			if matchFilter(filter, m.ref.msgs[i].subject) {
				want = append(want, m.ref.msgs[i].seq)
			}
		}
		if got := collect(m.t, m.s, filter, 0); !slices.Equal(got, want) {
			m.fatalf("LoadNext(%q) walk: got %v, want %v", filter, got, want)
		}
	}
}
