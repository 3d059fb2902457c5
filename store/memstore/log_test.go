package memstore

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLogAgainstSlice drives a msgLog with random appends (with sequence
// gaps), removals and held removals across many blocks, and checks every
// lookup against a plain slice of the live sequences.
func TestLogAgainstSlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var l msgLog
	var live []uint64 // the reference: live sequences in order
	node := &subjectState{name: "x"}
	seq := uint64(0)
	check := func() {
		t.Helper()
		if l.n > 0 && !l.at(0).live() {
			t.Fatalf("slot 0 is a tombstone")
		}
		if l.n-l.removed != len(live) {
			t.Fatalf("log holds %d live slots, want %d", l.n-l.removed, len(live))
		}
		for range 20 {
			q := rng.Uint64N(seq + 2)
			_, want := slices.BinarySearch(live, q)
			if got := l.find(q) >= 0; got != want {
				t.Fatalf("find(%d) = %v, want %v", q, got, want)
			}
			i := l.search(q)
			if i < l.n && l.at(i).seq < q || i > 0 && l.at(i-1).seq >= q {
				t.Fatalf("search(%d) = %d is not the lower bound", q, i)
			}
		}
		if i := l.last(); (i < 0) != (len(live) == 0) || i >= 0 && l.at(i).seq != live[len(live)-1] {
			t.Fatalf("last() = %d, want sequence %v", i, live)
		}
	}
	removeLive := func(k int) {
		i := l.find(live[k])
		if i < 0 {
			t.Fatalf("live sequence %d not found", live[k])
		}
		l.remove(i)
		live = slices.Delete(live, k, k+1)
	}
	for step := range 200_000 {
		switch r := rng.IntN(100); {
		case r < 55:
			seq += 1 + uint64(rng.IntN(3)/2) // a gap now and then
			l.append(entry{subject: node, seq: seq})
			live = append(live, seq)
		case r < 75 && len(live) > 0:
			removeLive(0) // the front, as eviction does
		case r < 98 && len(live) > 0:
			removeLive(rng.IntN(len(live)))
		case len(live) > 0:
			// A held batch removes by index, like a purge.
			l.hold = true
			for i := 0; i < l.n; i++ {
				if e := l.at(i); e.live() && rng.IntN(3) == 0 {
					k, _ := slices.BinarySearch(live, e.seq)
					live = slices.Delete(live, k, k+1)
					l.remove(i)
				}
			}
			l.release()
		}
		if step%97 == 0 {
			check()
		}
	}
	check()
	for len(live) > 0 {
		removeLive(rng.IntN(len(live)))
	}
	if l.n != 0 || len(l.blocks) != 0 {
		t.Fatalf("empty log keeps %d slots in %d blocks", l.n, len(l.blocks))
	}
}
