package expiry

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHeapOrders(t *testing.T) {
	var h Heap
	var want []int64
	for i := 0; i < 500; i++ {
		at := rand.Int64N(1000)
		h.Push(Item{At: at, Seq: uint64(i)})
		want = append(want, at)
	}
	slices.Sort(want)
	for i, w := range want {
		if got := h.Pop(); got.At != w {
			t.Fatalf("pop %d: at %d, want %d", i, got.At, w)
		}
	}
	if len(h) != 0 {
		t.Fatalf("%d items left", len(h))
	}
	raw := Heap{{At: 5}, {At: 1}, {At: 3}, {At: 0}}
	raw.Init()
	for _, w := range []int64{0, 1, 3, 5} {
		if got := raw.Pop(); got.At != w {
			t.Fatalf("after Init: at %d, want %d", got.At, w)
		}
	}
}
