package monitor

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/leafbox/leafbox/core/subject"
)

// DefaultSubListSize is the default limit of /subsz.
const DefaultSubListSize = 1024

// Subsz is the /subsz document (also served as /subscriptionsz): the
// subscription index's statistics and, with subs=1, one page of
// subscriptions.
type Subsz struct {
	ID  string    `json:"server_id"` // ID is the server's id.
	Now time.Time `json:"now"`       // Now is the time of the snapshot.
	SublistStats
	Total  int         `json:"total"`                        // Total is the number of subscriptions that passed the filters; 0 without subs=1.
	Offset int         `json:"offset"`                       // Offset is the index of the page's first subscription.
	Limit  int         `json:"limit"`                        // Limit is the page size.
	Subs   []SubDetail `json:"subscriptions_list,omitempty"` // Subs is the page (subs=1).
}

// SublistStats are the statistics of a subscription index. For several
// accounts, counts add up, MaxFanout is the largest and the rates are
// recomputed from the summed inputs.
type SublistStats struct {
	NumSubs      uint32  `json:"num_subscriptions"` // NumSubs is the number of subscriptions.
	NumCache     uint32  `json:"num_cache"`         // NumCache is the number of cached match results.
	NumInserts   uint64  `json:"num_inserts"`       // NumInserts counts subscriptions added.
	NumRemoves   uint64  `json:"num_removes"`       // NumRemoves counts subscriptions removed.
	NumMatches   uint64  `json:"num_matches"`       // NumMatches counts match lookups.
	CacheHitRate float64 `json:"cache_hit_rate"`    // CacheHitRate is the fraction of lookups served by the cache.
	MaxFanout    uint32  `json:"max_fanout"`        // MaxFanout is the largest cached result.
	AvgFanout    float64 `json:"avg_fanout"`        // AvgFanout is the mean cached result size.
}

// SubDetail describes one subscription.
type SubDetail struct {
	Account string `json:"account,omitempty"` // Account is the subscription's account; empty inside /connz.
	Subject string `json:"subject"`           // Subject is the subscribed subject, possibly with wildcards.
	Queue   string `json:"qgroup,omitempty"`  // Queue is the queue group, if any.
	Sid     string `json:"sid"`               // Sid is the client's subscription id.
	Msgs    int64  `json:"msgs"`              // Msgs counts messages delivered.
	Max     int64  `json:"max,omitempty"`     // Max is the auto-unsubscribe limit, 0 if none.
	Cid     uint64 `json:"cid"`               // Cid is the owning connection's id.
}

// SubszOptions select and page /subsz.
type SubszOptions struct {
	Subscriptions bool   // Subscriptions lists subscriptions (query subs).
	Offset        int    // Offset skips that many subscriptions (query offset).
	Limit         int    // Limit bounds the page; 0 means DefaultSubListSize (query limit).
	Account       string // Account selects one account (query acc).
	Test          string // Test keeps subscriptions a message on this literal subject would reach (query test).
}

// normalize applies the defaults and rejects a test subject that is not a
// valid publish subject, with nats-server's error text.
func (o *SubszOptions) normalize() error {
	o.Offset = max(o.Offset, 0)
	if o.Limit <= 0 {
		o.Limit = DefaultSubListSize
	}
	if o.Test != "" && !subject.ValidLiteral(o.Test) {
		return fmt.Errorf("invalid test subject, must be valid publish subject: %s", o.Test)
	}
	return nil
}

// buildSubsz pages subs as o selects. o must be normalized; subs is nil
// unless o.Subscriptions; it is only read.
func buildSubsz(id string, now time.Time, o SubszOptions, stats SublistStats, subs []SubDetail) *Subsz {
	sz := &Subsz{
		ID:           id,
		Now:          now.UTC(),
		SublistStats: stats,
		Offset:       o.Offset,
		Limit:        o.Limit,
	}
	if !o.Subscriptions {
		return sz
	}
	sel := make([]SubDetail, 0, len(subs))
	for _, s := range subs {
		if o.Account != "" && s.Account != o.Account {
			continue
		}
		if o.Test != "" && !subject.Match(s.Subject, o.Test) {
			continue
		}
		sel = append(sel, s)
	}
	sortSubs(sel)
	lo := min(o.Offset, len(sel))
	hi := lo + min(o.Limit, len(sel)-lo)
	sz.Total = len(sel)
	sz.Subs = sel[lo:hi:hi]
	return sz
}

// sortSubs orders subscriptions by account, connection and sid, comparing
// numeric sids by value, so that pages are stable between requests.
func sortSubs(subs []SubDetail) {
	slices.SortFunc(subs, func(a, b SubDetail) int {
		if c := cmp.Compare(a.Account, b.Account); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Cid, b.Cid); c != 0 {
			return c
		}
		// Shorter first puts "9" before "10" for the usual numeric sids.
		if c := cmp.Compare(len(a.Sid), len(b.Sid)); c != 0 {
			return c
		}
		return cmp.Compare(a.Sid, b.Sid)
	})
}
