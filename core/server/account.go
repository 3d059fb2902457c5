package server

import (
	"sync"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/sublist"
)

// account is an isolated subject namespace with its own sublist.
type account struct {
	name string
	sl   *sublist.Sublist[*subscription]

	// watchMu orders subscription changes with interest watchers and
	// their snapshots. It is taken after client.mu is released, never
	// while holding it.
	watchMu  sync.Mutex
	watchers map[*interestWatch]struct{}
}

// InterestEvent reports a subscription added to or removed from an
// account. Origin is the in-process connection that made it, nil for a
// client connection.
type InterestEvent struct {
	Subject string
	Queue   string
	Added   bool
	Origin  *Conn
}

type interestWatch struct {
	fn func(InterestEvent)
}

// addSub inserts sub and tells the account's watchers.
func (a *account) addSub(sub *subscription) error {
	a.watchMu.Lock()
	defer a.watchMu.Unlock()
	if err := a.sl.Insert(sub.subject, sub.queue, sub); err != nil {
		return err
	}
	a.notifyLocked(sub, true)
	return nil
}

// removeSub removes sub and tells the account's watchers. Removing a
// subscription that is not there is a no-op.
func (a *account) removeSub(sub *subscription) {
	a.watchMu.Lock()
	defer a.watchMu.Unlock()
	if a.sl.Remove(sub.subject, sub.queue, sub) == nil {
		a.notifyLocked(sub, false)
	}
}

// removeBatch is how many subscriptions removeSubs removes per hold of the
// locks, so that a connection closing with 100,000 subscriptions lets new
// subscribers and cache misses in between batches.
const removeBatch = 256

// removeSubs removes subs (everything a closing connection subscribed,
// typically) and tells the account's watchers. It holds watchMu and the sublist lock once per
// removeBatch subscriptions, not once per subscription, so that
// subscribers arriving while many connections close wait for a bounded
// number of short holds (see package sublist on the cache work per batch).
// Subscriptions that are not there are skipped.
func (a *account) removeSubs(subs []*subscription) {
	batch := make([]sublist.Entry[*subscription], 0, min(len(subs), removeBatch))
	for len(subs) > 0 {
		n := min(len(subs), removeBatch)
		batch = batch[:0]
		for _, sub := range subs[:n] {
			batch = append(batch, sublist.Entry[*subscription]{Subject: sub.subject, Queue: sub.queue, Value: sub})
		}
		subs = subs[n:]
		a.watchMu.Lock()
		for _, e := range a.sl.RemoveBatch(batch) {
			a.notifyLocked(e.Value, false)
		}
		a.watchMu.Unlock()
	}
}

// notifyLocked tells the watchers of a change; watchMu must be held, so
// that changes and snapshots are ordered.
func (a *account) notifyLocked(sub *subscription, added bool) {
	if len(a.watchers) == 0 {
		return
	}
	ev := InterestEvent{Subject: sub.subject, Queue: sub.queue, Added: added, Origin: sub.conn}
	for w := range a.watchers {
		w.fn(ev)
	}
}

// WatchInterest calls fn for every subscription added to or removed from
// account ("" for the global account) from now on, and returns the
// subscriptions that exist when watching starts, with no event missed or
// repeated between the two. fn runs with server locks held: it must not
// block or call back into the server; queue the event and return. cancel
// stops the events.
func (s *Server) WatchInterest(account string, fn func(InterestEvent)) (existing []InterestEvent, cancel func()) {
	if account == "" {
		account = auth.GlobalAccount
	}
	return s.lookupAccount(account).watch(fn, true)
}

// watch registers fn as a watcher of the account and, with snapshot,
// returns the subscriptions that exist when watching starts.
func (a *account) watch(fn func(InterestEvent), snapshot bool) (existing []InterestEvent, cancel func()) {
	w := &interestWatch{fn: fn}
	a.watchMu.Lock()
	if a.watchers == nil {
		a.watchers = make(map[*interestWatch]struct{})
	}
	a.watchers[w] = struct{}{}
	// Taking the snapshot under watchMu orders it against notify: a change
	// is either in the snapshot or reported afterwards.
	if snapshot {
		a.sl.Walk(func(subject, queue string, sub *subscription) bool {
			existing = append(existing, InterestEvent{Subject: subject, Queue: queue, Added: true, Origin: sub.conn})
			return true
		})
	}
	a.watchMu.Unlock()
	return existing, func() {
		a.watchMu.Lock()
		delete(a.watchers, w)
		a.watchMu.Unlock()
	}
}
