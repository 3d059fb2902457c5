package monitor

import (
	"fmt"
	"slices"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// subKeys renders a page as "account/cid/sid" strings.
func subKeys(sz Subsz) []string {
	out := make([]string, len(sz.Subs))
	for i, s := range sz.Subs {
		out[i] = fmt.Sprintf("%s/%d/%s", s.Account, s.Cid, s.Sid)
	}
	return out
}

func TestSubszFieldNames(t *testing.T) {
	h := newTestHandler(t, newFixture())
	for _, path := range []string{"/subsz", "/subscriptionsz"} {
		m := getJSON(t, h, path)
		requireKeys(t, path, m, "server_id", "now", "num_subscriptions", "num_cache", "num_inserts",
			"num_removes", "num_matches", "cache_hit_rate", "max_fanout", "avg_fanout",
			"total", "offset", "limit")
		requireNoKeys(t, path+" without subs", m, "subscriptions_list")
	}
	m := getJSON(t, h, "/subsz?subs=1")
	list := m["subscriptions_list"].([]any)
	require.Equal(t, len(list), 6, "list length")
	for _, e := range list {
		requireKeys(t, "subscriptions_list entry", e.(map[string]any), "account", "subject", "sid", "msgs", "cid")
	}
}

func TestSubszStatsAndTotals(t *testing.T) {
	h := newTestHandler(t, newFixture())
	sz := getStruct[Subsz](t, h, "/subsz")
	require.Equal(t, sz.NumSubs, uint32(6), "num_subscriptions")
	require.Equal(t, sz.NumMatches, uint64(11), "num_matches")
	require.
		// nats-server reports total only when listing.
		Equal(t, sz.Total, 0, "total without subs")
	require.Equal(t, sz.Limit, DefaultSubListSize, "limit")

	sz = getStruct[Subsz](t, h, "/subsz?acc=A")
	require.Equal(t, sz.NumSubs, uint32(4), "num_subscriptions acc=A")
}

func TestSubszList(t *testing.T) {
	h := newTestHandler(t, newFixture())
	tests := []struct {
		query string
		want  []string
		total int
	}{
		{"subs=1", []string{"$G/3/1", "A/1/1", "A/1/2", "A/1/10", "A/4/1", "B/2/1"}, 6},
		{"subs=true&acc=A", []string{"A/1/1", "A/1/2", "A/1/10", "A/4/1"}, 4},
		{"subs=1&test=foo.one", []string{"$G/3/1", "A/1/1", "A/4/1"}, 3},
		{"subs=1&test=bar.baz.qux", []string{"$G/3/1", "B/2/1"}, 2},
		{"subs=1&test=nothing", []string{"$G/3/1"}, 1},
		{"subs=1&acc=A&test=foo.ten", []string{"A/1/10", "A/4/1"}, 2},
		{"subs=1&offset=1&limit=2", []string{"A/1/1", "A/1/2"}, 6},
		{"subs=1&offset=5&limit=2", []string{"B/2/1"}, 6},
		{"subs=1&offset=9", []string{}, 6},
		{"subs=1&offset=-1&limit=0", []string{"$G/3/1", "A/1/1", "A/1/2", "A/1/10", "A/4/1", "B/2/1"}, 6},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			sz := getStruct[Subsz](t, h, "/subsz?"+tc.query)
			if got := subKeys(sz); !slices.Equal(got, tc.want) {
				t.Fatalf("page %v, want %v", got, tc.want)
			}
			require.Equal(t, sz.Total, tc.total, "total")
		})
	}
}

func TestSubszDetailValues(t *testing.T) {
	h := newTestHandler(t, newFixture())
	sz := getStruct[Subsz](t, h, "/subsz?subs=1&acc=A&test=foo.one")
	require.Equal(t, sz.Subs[0].Subject, "foo.one", "subject")
	require.Equal(t, sz.Subs[0].Max, int64(5), "max")
	require.Equal(t, sz.Subs[1].Queue, "q1", "queue")
	require.Equal(t, sz.Subs[1].Subject, "foo.*", "subject")
}

func TestSubszBadParams(t *testing.T) {
	h := newTestHandler(t, newFixture())
	tests := []struct{ query, want string }{
		{"test=foo.*", "invalid test subject, must be valid publish subject: foo.*"},
		{"test=foo..bar", "invalid test subject, must be valid publish subject: foo..bar"},
		{"subs=yes", "Error decoding boolean for 'subs': "},
		{"offset=one", "Error decoding int for 'offset': "},
		{"limit=x", "Error decoding int for 'limit': "},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			require400(t, h, "/subsz?"+tc.query, tc.want)
		})
	}
}
