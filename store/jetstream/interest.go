package jetstream

import (
	"sync"
	"sync/atomic"

	"github.com/leafbox/leafbox/core/subject"
)

// InterestWatcher is the optional ability of a Bus to report subscription
// changes, which makes push consumers event driven: a push consumer
// without interest on its deliver subject sleeps until a subscription
// that may match it comes (from a client, a queue group member or a leaf
// link's interest), and one with interest learns at once that its last
// subscriber left. Without it, a push consumer lacking interest looks
// again between interestPollMin and interestPollMax.
type InterestWatcher interface {
	// WatchInterest calls fn with the subject and queue group of every
	// subscription added to or removed from the Bus's account from now
	// on, until cancel. fn runs with broker locks held: it must not
	// block or call the Bus.
	WatchInterest(fn func(subject, queue string)) (cancel func())
}

// QueueInterester is the optional ability of a Bus to tell whether a
// queue group has a member subscribed to a subject. With it a push
// consumer with a deliver_group counts only that group's members as
// interest, as nats-server does: a plain subscriber to the deliver
// subject receives the deliveries of a consumer the group keeps busy,
// but does not by itself start one. Without it any subscription counts.
type QueueInterester interface {
	HasQueueInterest(subject, queue string) bool
}

// pushInterest reports whether the push consumer's deliver subject has
// the interest that makes it deliver. Caller holds c.mu.
func (c *consumer) pushInterest() bool {
	if c.cfg.DeliverGroup != "" {
		if q, ok := c.eng.bus.(QueueInterester); ok {
			return q.HasQueueInterest(c.cfg.DeliverSubject, c.cfg.DeliverGroup)
		}
	}
	return c.eng.bus.HasInterest(c.cfg.DeliverSubject)
}

// pushIndex maps deliver subjects to the push consumers delivering there,
// so a subscription change wakes exactly the consumers it may concern.
// Its lock is a leaf: it is taken under consumer.mu and under the
// broker's subscription locks (in changed), and nothing is called with
// it held but kick.
type pushIndex struct {
	// watching is set when the Bus is an InterestWatcher.
	watching bool
	// n counts the registered consumers, so a subscription change
	// costs one atomic load while there are none.
	n  atomic.Int64
	mu sync.Mutex
	// bySubject holds the consumers of each deliver subject.
	bySubject map[string]map[*consumer]struct{}
}

// add registers c as delivering to subj.
func (x *pushIndex) add(subj string, c *consumer) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.bySubject == nil {
		x.bySubject = make(map[string]map[*consumer]struct{})
	}
	set := x.bySubject[subj]
	if set == nil {
		set = make(map[*consumer]struct{})
		x.bySubject[subj] = set
	}
	if _, ok := set[c]; !ok {
		set[c] = struct{}{}
		x.n.Add(1)
	}
}

// remove unregisters c from subj.
func (x *pushIndex) remove(subj string, c *consumer) {
	x.mu.Lock()
	defer x.mu.Unlock()
	set := x.bySubject[subj]
	if _, ok := set[c]; !ok {
		return
	}
	delete(set, c)
	x.n.Add(-1)
	if len(set) == 0 {
		delete(x.bySubject, subj)
	}
}

// changed wakes the consumers whose deliver subject a subscription to
// subj (a literal or a wildcard) added or removed may match; each then
// asks the Bus for its interest. It is the InterestWatcher callback.
func (x *pushIndex) changed(subj, _ string) {
	if x.n.Load() == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if subject.IsLiteral(subj) {
		for c := range x.bySubject[subj] {
			c.kick()
		}
		return
	}
	for deliver, set := range x.bySubject {
		if subject.Match(subj, deliver) {
			for c := range set {
				c.kick()
			}
		}
	}
}

// watchPush registers a push consumer's deliver subject. Caller holds
// c.mu or owns c alone.
func (c *consumer) watchPush() {
	if c.cfg.DeliverSubject != "" {
		c.eng.pushes.add(c.cfg.DeliverSubject, c)
	}
}

// unwatchPush undoes watchPush. Caller holds c.mu or owns c alone.
func (c *consumer) unwatchPush() {
	if c.cfg.DeliverSubject != "" {
		c.eng.pushes.remove(c.cfg.DeliverSubject, c)
	}
}
