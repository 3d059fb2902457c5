package leaf

import (
	"cmp"
	"slices"

	"github.com/leafbox/leafbox/core/proto"
	"github.com/leafbox/leafbox/core/sublist"
)

// interestKey identifies interest on a leafnode link: a subject, and a
// queue group name for queue interest. nats-server keys it as "subject" or
// "subject queue".
type interestKey struct {
	subject string
	queue   string
}

// localInterest is the local account's interest as the hub must see it:
// how many local subscriptions share each key. It decides which LS+ and
// LS- lines a change produces. It is a pure table: no locks, goroutines or
// I/O; the Link guards it.
//
// The rules are nats-server's (leafnode.go updateSmap): a plain subject is
// announced when its count goes 0→1 and withdrawn at 1→0; queue interest
// is re-announced with the new weight (the member count) on every change
// and withdrawn when the weight reaches 0.
type localInterest struct {
	counts map[interestKey]int32
}

func newLocalInterest() *localInterest {
	return &localInterest{counts: make(map[interestKey]int32)}
}

// change adds delta (+1 or -1) subscriptions to key and reports the key's
// new count and whether the hub must be told. A removal of an unknown key
// is ignored.
func (t *localInterest) change(key interestKey, delta int32) (count int32, notify bool) {
	old, ok := t.counts[key]
	if delta < 0 && !ok {
		return 0, false
	}
	count = old + delta
	if count > 0 {
		t.counts[key] = count
	} else {
		count = 0
		delete(t.counts, key)
	}
	if key.queue != "" {
		return count, true
	}
	return count, (old <= 0) != (count <= 0)
}

// apply applies one local subscription change: it keeps queues (when not
// nil) holding the local queue groups with a member, and returns the
// change's key, the key's new count and whether the other side must be
// told (see change).
func (t *localInterest) apply(ev Interest, queues *sublist.Sublist[struct{}]) (key interestKey, count int32, notify bool) {
	key = interestKey{ev.Subject, ev.Queue}
	delta := int32(1)
	if !ev.Added {
		delta = -1
	}
	if ev.Queue != "" && queues != nil {
		if ev.Added {
			_ = queues.Insert(ev.Subject, ev.Queue, struct{}{})
		} else {
			_ = queues.Remove(ev.Subject, ev.Queue, struct{}{})
		}
	}
	count, notify = t.change(key, delta)
	return key, count, notify
}

// len returns the number of keys.
func (t *localInterest) len() int { return len(t.counts) }

// appendAll appends an LS+ for every key allowed by allow, in subject then
// queue order (so the output is deterministic), and returns the extended
// slice and the number of lines.
func (t *localInterest) appendAll(dst []byte, allow func(string) bool) ([]byte, int) {
	keys := make([]interestKey, 0, len(t.counts))
	for k := range t.counts {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b interestKey) int {
		return cmp.Or(cmp.Compare(a.subject, b.subject), cmp.Compare(a.queue, b.queue))
	})
	n := 0
	for _, k := range keys {
		if allow(k.subject) {
			dst = appendInterest(dst, k, t.counts[k])
			n++
		}
	}
	return dst, n
}

// appendInterest appends the line that announces count for key: LS+ (with
// the count as weight for queue interest) or, for 0, LS-.
func appendInterest(dst []byte, key interestKey, count int32) []byte {
	if count <= 0 {
		return proto.AppendLeafUnsub(dst, []byte(key.subject), []byte(key.queue))
	}
	return proto.AppendLeafSub(dst, []byte(key.subject), []byte(key.queue), count)
}

// hubEntry is one LS+ the hub sent: interest on the hub side that local
// messages are forwarded to.
type hubEntry struct {
	subject string
	queue   string
	weight  int32 // queue members behind a queue entry; 0 for plain
}

// hubInterest is the interest the hub announced on the current
// connection. The reader goroutine changes it; message handlers on
// publisher goroutines read it through the sublist, which is safe for
// concurrent use. The map and the per-subject counts belong to the reader.
type hubInterest struct {
	entries  map[interestKey]*hubEntry
	subjects map[string]int // entries per subject
	sl       *sublist.Sublist[*hubEntry]
}

func newHubInterest() *hubInterest {
	return &hubInterest{
		entries:  make(map[interestKey]*hubEntry),
		subjects: make(map[string]int),
		sl:       sublist.New[*hubEntry](),
	}
}

// add records an LS+. It reports whether the subject is new (the first
// entry on it), so that the caller subscribes locally. A repeated LS+
// updates a queue entry's weight and is otherwise ignored, as in
// nats-server. It returns an error for a subject or queue the sublist
// rejects.
func (h *hubInterest) add(subj, queue string, weight int32) (newSubject bool, err error) {
	key := interestKey{subj, queue}
	if e, ok := h.entries[key]; ok {
		e.weight = weight
		return false, nil
	}
	e := &hubEntry{subject: subj, queue: queue, weight: weight}
	if err := h.sl.Insert(subj, queue, e); err != nil {
		return false, err
	}
	h.entries[key] = e
	h.subjects[subj]++
	return h.subjects[subj] == 1, nil
}

// remove records an LS-. It reports whether the subject has no entries
// left, so that the caller unsubscribes locally. Unknown keys are ignored.
func (h *hubInterest) remove(subj, queue string) (lastForSubject bool) {
	key := interestKey{subj, queue}
	e, ok := h.entries[key]
	if !ok {
		return false
	}
	delete(h.entries, key)
	_ = h.sl.Remove(subj, queue, e)
	if h.subjects[subj]--; h.subjects[subj] <= 0 {
		delete(h.subjects, subj)
		return true
	}
	return false
}

// len returns the number of entries (the hub's subscriptions on the link).
func (h *hubInterest) len() int { return len(h.entries) }

// route is how a local message travels to the hub: once, with the queue
// groups it is offered to.
type route struct {
	// canonical is the subject pattern whose local subscription sends the
	// message. Every matching pattern has a local subscription and each
	// sees the message; only this one forwards it, so the hub gets it once.
	canonical string
	plain     bool     // the hub has plain interest
	queues    []string // hub queue groups matching the subject
}

// match computes the route of a message on subject subj (literal). The
// matching queue group names are appended to queues (a caller's stack
// buffer) and returned in route.queues.
func (h *hubInterest) match(subj []byte, queues []string) route {
	res := h.sl.MatchBytes(subj)
	var r route
	for _, e := range res.Plain {
		r.plain = true
		if r.canonical == "" || e.subject < r.canonical {
			r.canonical = e.subject
		}
	}
	for i := range res.Queues {
		q := &res.Queues[i]
		queues = append(queues, q.Name)
		for _, e := range q.Members {
			if r.canonical == "" || e.subject < r.canonical {
				r.canonical = e.subject
			}
		}
	}
	r.queues = queues
	return r
}

// watchGate orders the events of an interest watch with the snapshot of
// existing interest the watch returned: events that arrive before the
// snapshot is applied wait and are applied right after it, so none is
// missed or applied out of order. Its owner's lock guards it; apply runs
// under that lock.
type watchGate[E any] struct {
	ready bool
	early []E
}

// offer applies ev, or keeps it until open.
func (g *watchGate[E]) offer(ev E, apply func(E)) {
	if g.ready {
		apply(ev)
		return
	}
	g.early = append(g.early, ev)
}

// open applies the snapshot, then the events kept meanwhile; from then
// on offer applies at once.
func (g *watchGate[E]) open(existing []E, apply func(E)) {
	for _, ev := range existing {
		apply(ev)
	}
	for _, ev := range g.early {
		apply(ev)
	}
	g.early, g.ready = nil, true
}
