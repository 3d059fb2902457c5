package sublist

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// Operations are decoded from bytes so that the random test and the fuzz
// target share one interpreter. Tokens come from a small alphabet so that
// patterns collide often; the alphabet includes "" to produce invalid
// subjects.
var (
	patternTokens = []string{"a", "b", "c", "*", ">", "a", "b", ""}
	literalTokens = []string{"a", "b", "c"}
	queueNames    = []string{"", "", "q", "r"}
)

// publishSubjects is every literal subject of one to four tokens from
// literalTokens, plus some invalid ones.
var publishSubjects = func() []string {
	out := []string{"", "a.", ".a", "a..b", "a.*", "a.>", "*", ">", "a b"}
	level := []string{""}
	for range 4 {
		var next []string
		for _, prefix := range level {
			for _, tok := range literalTokens {
				if prefix != "" {
					tok = prefix + "." + tok
				}
				next = append(next, tok)
			}
		}
		out = append(out, next...)
		level = next
	}
	return out
}()

type opReader struct{ data []byte }

func (r *opReader) next() int {
	if len(r.data) == 0 {
		return 0
	}
	b := r.data[0]
	r.data = r.data[1:]
	return int(b)
}

func (r *opReader) pick(options []string) string { return options[r.next()%len(options)] }

func (r *opReader) pattern() string {
	toks := make([]string, 1+r.next()%4)
	for i := range toks {
		toks[i] = r.pick(patternTokens)
	}
	return strings.Join(toks, ".")
}

// runOps applies the operations encoded in data to a Sublist and to the
// naive model and fails on the first difference. Every 32 operations, and at
// the end, it compares all observables over publishSubjects, which also fills
// the match cache so that Insert and Remove must update cached results.
func runOps(t testing.TB, data []byte) {
	s, m := New[int](), &model{}
	r := &opReader{data: data}
	// The memo keeps the last matched subject across every operation, so
	// each Insert, Remove and RemoveBatch must invalidate it.
	var memo Memo[int]
	memoSubj := ""
	for ops := 0; len(r.data) > 0; ops++ {
		if memoSubj != "" {
			if got, want := canon(t, s.MatchBytesMemo([]byte(memoSubj), &memo)), canon(t, m.match(memoSubj)); got != want {
				t.Fatalf("MatchBytesMemo(%q) = %s, want %s", memoSubj, got, want)
			}
		}
		op := r.next()
		if op >= batchOp {
			removeBatch(t, s, m, r)
			continue
		}
		switch op % 7 {
		case 0, 1, 2: // insert
			subj, queue, v := r.pattern(), r.pick(queueNames), r.next()%8
			if got, want := s.Insert(subj, queue, v), m.insert(subj, queue, v); got != want {
				t.Fatalf("Insert(%q, %q, %d) = %v, want %v", subj, queue, v, got, want)
			}
		case 3, 4: // remove an existing entry
			if len(m.entries) == 0 {
				continue
			}
			e := m.entries[r.next()%len(m.entries)]
			require.NoError(t, s.Remove(e.Subject, e.Queue, e.Value))
			require.NoError(t, m.remove(e.Subject, e.Queue, e.Value))
		case 5: // remove anything, usually absent
			subj, queue, v := r.pattern(), r.pick(queueNames), r.next()%8
			if got, want := s.Remove(subj, queue, v), m.remove(subj, queue, v); got != want {
				t.Fatalf("Remove(%q, %q, %d) = %v, want %v", subj, queue, v, got, want)
			}
		default: // match one subject, twice to hit the cache
			subj := r.pick(publishSubjects)
			want := canon(t, m.match(subj))
			for range 2 {
				if got := canon(t, s.MatchBytes([]byte(subj))); got != want {
					t.Fatalf("MatchBytes(%q) = %s, want %s", subj, got, want)
				}
				if got := canon(t, s.MatchBytesMemo([]byte(subj), &memo)); got != want {
					t.Fatalf("MatchBytesMemo(%q) = %s, want %s", subj, got, want)
				}
			}
			memoSubj = subj
		}
		if ops%32 == 31 {
			checkAgainst(t, s, m, publishSubjects)
		}
	}
	checkAgainst(t, s, m, publishSubjects)
	st := s.Stats()
	require.Equal(t, int(st.NumInserts-st.NumRemoves), len(m.entries))
}

// batchOp and above encode a RemoveBatch; smaller bytes encode the other
// operations (op % 7), so that older corpus entries keep their meaning.
const batchOp = 0xe0

// removeBatch removes a batch of up to 12 entries decoded from r, mostly
// existing ones (some twice) mixed with absent and invalid ones, and checks
// that RemoveBatch reports exactly those the model removed, in order.
func removeBatch(t testing.TB, s *Sublist[int], m *model, r *opReader) {
	t.Helper()
	var batch, want []Entry[int]
	for range 1 + r.next()%12 {
		e := Entry[int]{Subject: r.pattern(), Queue: r.pick(queueNames), Value: r.next() % 8}
		if len(m.entries) > 0 && r.next()%4 != 0 {
			e = m.entries[r.next()%len(m.entries)]
		}
		batch = append(batch, e)
	}
	for _, e := range batch {
		if m.remove(e.Subject, e.Queue, e.Value) == nil {
			want = append(want, e)
		}
	}
	if got := s.RemoveBatch(slices.Clone(batch)); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("RemoveBatch(%v) = %v, want %v", batch, got, want)
	}
}

func TestDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	runs := 200
	if testing.Short() {
		runs = 20
	}
	for range runs {
		data := make([]byte, 50+rng.IntN(1500))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		runOps(t, data)
	}
}

func FuzzSublist(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 6, 0})
	f.Add([]byte("insert then match a lot of things"))
	f.Add([]byte("\x00\x01\x00\x01\x06\x0d\x02\x05\x00\x06\x0d\xe0\x03\x01\x00\x01\x01\x00\x06\x0d"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1024 { // longer inputs add little but slow the fuzzer down
			return
		}
		runOps(t, data)
	})
}

// TestManyValuesPerNode drives sets past indexAt, where they switch to an
// index, and back, with repeated insertions mixed in.
func TestManyValuesPerNode(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s, m := New[int](), &model{}
	patterns := []string{"foo", "foo.*", ">"}
	subjects := []string{"foo", "foo.bar", "bar"}
	for round := range 6 {
		for range 3 * indexAt {
			subj, queue, v := patterns[rng.IntN(len(patterns))], queueNames[rng.IntN(len(queueNames))], rng.IntN(4*indexAt)
			require.NoError(t, s.Insert(subj, queue, v))
			require.NoError(t, m.insert(subj, queue, v))
		}
		checkAgainst(t, s, m, subjects)
		for len(m.entries) > round*indexAt/2 {
			e := m.entries[rng.IntN(len(m.entries))]
			require.NoError(t, s.Remove(e.Subject, e.Queue, e.Value))
			require.NoError(t, m.remove(e.Subject, e.Queue, e.Value))
			checkAgainst(t, s, m, subjects)
		}
	}
}
