package expiry

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"
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

func TestTimerArmsEarliest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fired := make(chan time.Time, 4)
		var x Timer
		x.Fire = func() { fired <- time.Now() }
		start := time.Now()
		x.ArmNext(math.MaxInt64)
		if x.Due() != 0 {
			t.Fatal("armed with nothing to expire")
		}
		x.AddTTL(1, start.Add(time.Second).UnixNano(), func(uint64) bool { return true })
		x.Arm(start.Add(5 * time.Second).UnixNano()) // later: keeps the earlier time
		if got := <-fired; got.Sub(start) != time.Second {
			t.Fatalf("fired after %v, want 1s", got.Sub(start))
		}
		x.Fired()
		x.ClearTTLs()
		x.ArmNext(start.Add(3 * time.Second).UnixNano())
		if got := <-fired; got.Sub(start) != 3*time.Second {
			t.Fatalf("fired after %v, want 3s", got.Sub(start))
		}
		x.Stop()
		if x.Due() != 0 || x.Live != 0 || len(x.TTLs) != 0 {
			t.Fatalf("after Stop and ClearTTLs: due %d live %d ttls %d", x.Due(), x.Live, len(x.TTLs))
		}
	})
}
