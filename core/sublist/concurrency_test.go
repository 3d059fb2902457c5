package sublist

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/subject"
)

// TestConcurrent runs writers inserting and removing entries while readers
// match. Entries present for the whole test ("stable", values below
// churnBase) must always be reported exactly; churned values must only be
// reported for subjects their pattern matches. Each writer also checks that
// its own Insert is visible to its next Match and its Remove likewise, which
// catches a stale cache.
func TestConcurrent(t *testing.T) {
	const churnBase = 1000
	subjects := []string{"a", "a.b", "a.b.c", "a.x.c", "a.b.c.d", "b.c", "b.b", "x", "x.y.z", "c.b.a"}
	stable := []testEntry{
		{"a.b.c", "", 1}, {"a.*.c", "", 2}, {"a.>", "q", 3}, {">", "r", 4}, {"*.b.*", "", 5},
		{"a.b", "q", 6}, {"b.*", "", 7}, {"a.b.c", "q", 8}, {"x", "", 9},
	}
	churn := []testEntry{ // values unused; the index identifies the pattern
		{"a.b.c", "", 0}, {"a.*", "q", 0}, {"*.*.c", "", 0}, {"a.>", "", 0}, {">", "q", 0},
		{"b.b", "r", 0}, {"*.b", "", 0}, {"x.y.z", "q", 0}, {"c.>", "", 0},
	}
	// Each churn pattern has a subject it matches, for the writer's checks.
	probe := make([]string, len(churn))
	for i, e := range churn {
		for _, subj := range subjects {
			if subject.Match(e.subject, subj) {
				probe[i] = subj
				break
			}
		}
		if probe[i] == "" {
			t.Fatalf("no test subject matches %q", e.subject)
		}
	}

	s := newTestSublist(t, stable...)
	m := &model{}
	for _, e := range stable {
		require.NoError(t, m.insert(e.subject, e.queue, e.value))
	}
	want := make(map[string]string)
	for _, subj := range subjects {
		want[subj] = canon(t, m.match(subj))
	}

	writers, readers, iterations := 2, 2, 5000
	if testing.Short() {
		iterations = 300
	}
	var done atomic.Bool
	var writersWG, readersWG sync.WaitGroup
	for w := range writers {
		writersWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			type live struct{ index, value int }
			var pending []live
			var memo Memo[int] // warm on the probes, so a stale one fails
			for i := range iterations {
				if t.Failed() {
					return
				}
				index := rng.IntN(len(churn))
				e := churn[index]
				v := churnBase + ((w*iterations+i)*len(churn) + index)
				if err := s.Insert(e.subject, e.queue, v); err != nil {
					t.Errorf("Insert: %v", err)
					return
				}
				if !contains(s.MatchBytes([]byte(probe[index])), e.queue, v) {
					t.Errorf("Match(%q) misses %d just inserted under %q", probe[index], v, e.subject)
					return
				}
				if !contains(s.MatchBytesMemo([]byte(probe[index]), &memo), e.queue, v) {
					t.Errorf("MatchBytesMemo(%q) misses %d just inserted under %q", probe[index], v, e.subject)
					return
				}
				pending = append(pending, live{index, v})
				if len(pending) < 1+rng.IntN(8) {
					continue
				}
				old := pending[0]
				pending = pending[1:]
				e = churn[old.index]
				if err := s.Remove(e.subject, e.queue, old.value); err != nil {
					t.Errorf("Remove: %v", err)
					return
				}
				if contains(s.Match(probe[old.index]), e.queue, old.value) {
					t.Errorf("Match(%q) has %d just removed from %q", probe[old.index], old.value, e.subject)
					return
				}
				if contains(s.MatchBytesMemo([]byte(probe[old.index]), &memo), e.queue, old.value) {
					t.Errorf("MatchBytesMemo(%q) has %d just removed from %q", probe[old.index], old.value, e.subject)
					return
				}
			}
			for _, p := range pending {
				e := churn[p.index]
				if err := s.Remove(e.subject, e.queue, p.value); err != nil {
					t.Errorf("Remove: %v", err)
				}
			}
		})
	}
	for r := range readers {
		readersWG.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(r), 11))
			isStable := func(v int) bool { return v < churnBase }
			var memo Memo[int]
			for !done.Load() && !t.Failed() {
				subj := subjects[rng.IntN(len(subjects))]
				var res *Result[int]
				switch rng.IntN(4) {
				case 0:
					res = s.Match(subj)
				case 1:
					res = s.MatchBytes([]byte(subj))
				default: // often the memo's own subject again
					res = s.MatchBytesMemo([]byte(subj), &memo)
				}
				got, err := render(res, isStable)
				if err != nil {
					t.Error(err)
					return
				}
				if got != want[subj] {
					t.Errorf("Match(%q) stable entries = %s, want %s", subj, got, want[subj])
					return
				}
				if err := checkChurned(res, subj, churn, churnBase); err != nil {
					t.Error(err)
					return
				}
				if want[subj] != "[]" && !s.HasInterest(subj) {
					t.Errorf("HasInterest(%q) = false with stable interest", subj)
					return
				}
				runtime.Gosched() // let the writers make progress on few CPUs
			}
		})
	}
	writersWG.Wait()
	done.Store(true)
	readersWG.Wait()
	if t.Failed() {
		return
	}
	checkAgainst(t, s, m, subjects)
	st := s.Stats()
	require.Equal(t, st.NumInserts-st.NumRemoves, uint64(len(stable)))
}

// contains reports whether r holds v in queue ("" for plain).
func contains(r *Result[int], queue string, v int) bool {
	if queue == "" {
		return slices.Contains(r.Plain, v)
	}
	i := r.queueIndex(queue)
	return i >= 0 && slices.Contains(r.Queues[i].Members, v)
}

// checkChurned verifies that every churned value in r was inserted under a
// pattern and queue that match subj.
func checkChurned(r *Result[int], subj string, churn []testEntry, churnBase int) error {
	check := func(queue string, v int) error {
		if v < churnBase {
			return nil
		}
		e := churn[(v-churnBase)%len(churn)]
		if !subject.Match(e.subject, subj) || e.queue != queue {
			return fmt.Errorf("Match(%q) reports %d in queue %q, inserted as %q in queue %q", subj, v, queue, e.subject, e.queue)
		}
		return nil
	}
	for _, v := range r.Plain {
		if err := check("", v); err != nil {
			return err
		}
	}
	for _, q := range r.Queues {
		for _, v := range q.Members {
			if err := check(q.Name, v); err != nil {
				return err
			}
		}
	}
	return nil
}
