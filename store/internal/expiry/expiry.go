// Package expiry is the min-heap of per-message expiry times that the
// memory and file engines share.
package expiry

// Item is one pending per-message expiry: sequence Seq expires at At (Unix
// nanoseconds).
type Item struct {
	At  int64
	Seq uint64
}

// Heap is a binary min-heap of Items ordered by At. The zero value is an
// empty heap.
type Heap []Item

// Push adds it.
func (h *Heap) Push(it Item) {
	*h = append(*h, it)
	h.up(len(*h) - 1)
}

// Pop removes and returns the earliest item; the heap must not be empty.
func (h *Heap) Pop() Item {
	old := *h
	it := old[0]
	n := len(old) - 1
	old[0] = old[n]
	*h = old[:n]
	if n > 0 {
		h.down(0)
	}
	return it
}

// Init restores the heap order after the slice was filled directly.
func (h Heap) Init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h Heap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if h[p].At <= h[i].At {
			return
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (h Heap) down(i int) {
	n := len(h)
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if c+1 < n && h[c+1].At < h[c].At {
			c++
		}
		if h[i].At <= h[c].At {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
