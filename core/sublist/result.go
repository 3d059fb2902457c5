package sublist

import "slices"

// Result is the set of entries matching a published subject. It is an
// immutable snapshot shared between callers: callers must not modify it,
// its slices, or its queues' Members. Its slices have no spare capacity, so
// appending to one copies it. The order of Plain, of Queues and of each
// queue's Members is unspecified.
type Result[T comparable] struct {
	// Plain holds the values of matching entries with no queue group, once
	// per matching entry.
	Plain []T
	// Queues holds one Queue per distinct queue name among the matching
	// entries. A message is delivered to one member of each.
	Queues []Queue[T]
}

// Queue is one queue group within a Result.
type Queue[T comparable] struct {
	// Name is the queue group name.
	Name string
	// Members holds the values of every matching entry in the group,
	// merged across all matching subjects, once per matching entry.
	Members []T
}

func (r *Result[T]) isEmpty() bool { return len(r.Plain) == 0 && len(r.Queues) == 0 }

// fanout is the number of deliveries a message matching r makes: one per
// plain value and one per queue group.
func (r *Result[T]) fanout() int { return len(r.Plain) + len(r.Queues) }

func (r *Result[T]) queueIndex(name string) int {
	for i := range r.Queues {
		if r.Queues[i].Name == name {
			return i
		}
	}
	return -1
}

// build collects the entries of nodes into a new Result.
func build[T comparable](nodes []*node[T]) *Result[T] {
	plain := 0
	for _, n := range nodes {
		plain += len(n.plain.list)
	}
	r := &Result[T]{}
	if plain > 0 {
		r.Plain = make([]T, 0, plain)
	}
	for _, n := range nodes {
		r.Plain = n.plain.appendTo(r.Plain)
		for _, q := range n.queues {
			i := r.queueIndex(q.name)
			if i < 0 {
				i = len(r.Queues)
				r.Queues = append(r.Queues, Queue[T]{Name: q.name})
			}
			r.Queues[i].Members = q.members.appendTo(r.Queues[i].Members)
		}
	}
	return r.clip()
}

// clip drops spare capacity from the slices of r, which must not be shared
// yet, so that a caller appending to one cannot write into memory another
// caller can see. It returns r.
func (r *Result[T]) clip() *Result[T] {
	r.Plain = slices.Clip(r.Plain)
	r.Queues = slices.Clip(r.Queues)
	for i := range r.Queues {
		r.Queues[i].Members = slices.Clip(r.Queues[i].Members)
	}
	return r
}

// with returns a copy of r with v added to queue ("" for plain). r is not
// modified; unchanged slices are shared with r, new ones are clipped.
func (r *Result[T]) with(queue string, v T) *Result[T] {
	out := &Result[T]{Plain: r.Plain, Queues: r.Queues}
	if queue == "" {
		out.Plain = slices.Clip(append(r.Plain, v)) // r is clipped, so append copies
	} else if i := r.queueIndex(queue); i < 0 {
		out.Queues = slices.Clip(append(r.Queues, Queue[T]{Name: queue, Members: []T{v}}))
	} else {
		out.Queues = slices.Clip(slices.Clone(r.Queues))
		out.Queues[i].Members = slices.Clip(append(r.Queues[i].Members, v))
	}
	return out
}
