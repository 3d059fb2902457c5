package monitor

import (
	"slices"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// cids returns the connection ids of a page in order.
func cids(cz Connz) []uint64 {
	out := make([]uint64, len(cz.Conns))
	for i, c := range cz.Conns {
		out[i] = c.Cid
	}
	return out
}

func TestConnzFieldNames(t *testing.T) {
	h := newTestHandler(t, newFixture())
	m := getJSON(t, h, "/connz")
	requireKeys(t, "connz", m, "server_id", "now", "num_connections", "total", "offset", "limit", "connections")
	conns := m["connections"].([]any)
	c := conns[0].(map[string]any)
	requireKeys(t, "connz.connections[0]", c,
		"cid", "kind", "type", "ip", "port", "start", "last_activity", "rtt", "uptime", "idle",
		"pending_bytes", "in_msgs", "out_msgs", "in_bytes", "out_bytes", "subscriptions",
		"name", "lang", "version")
	requireNoKeys(t, "open connection", c, "stop", "reason", "authorized_user", "account",
		"subscriptions_list", "subscriptions_list_detail")
	require.Equal(t, c["kind"], any("Client"), "kind")
	require.Equal(t, c["type"], any("nats"), "type")
	require.Equal(t, m["limit"], any(float64(DefaultConnListSize)), "limit")

	m = getJSON(t, h, "/connz?state=closed&auth=true&subs=1")
	c = m["connections"].([]any)[0].(map[string]any)
	requireKeys(t, "closed connection", c, "stop", "reason", "authorized_user", "account")
}

func TestConnzValues(t *testing.T) {
	h := newTestHandler(t, newFixture())
	cz := getStruct[Connz](t, h, "/connz?cid=1")
	if len(cz.Conns) != 1 {
		t.Fatalf("cid=1: %d connections", len(cz.Conns))
	}
	c := cz.Conns[0]
	require.Equal(t, cz.ID, "NSERVERID", "server_id")
	require.Equal(t, cz.Now, testNow, "now")
	require.Equal(t, c.Uptime, "9h0m0s", "uptime")
	require.Equal(t, c.Idle, "5m0s", "idle")
	require.Equal(t, c.RTT, "2ms", "rtt")
	require.Equal(t, c.NumSubs, uint32(3), "subscriptions")
	require.Equal(t, c.Pending, 10, "pending")
	require.Equal(t, cz.Limit, 1, "limit with cid")

	// A closed connection's uptime and idle time stop at its close.
	cz = getStruct[Connz](t, h, "/connz?state=closed&cid=5")
	c = cz.Conns[0]
	require.Equal(t, c.Uptime, "4h30m0s", "closed uptime")
	require.Equal(t, c.Idle, "30m0s", "closed idle")
	require.Equal(t, c.Reason, "Client Closed", "reason")
	if c.Stop == nil || !c.Stop.Equal(t0.Add(5*time.Hour)) {
		t.Fatalf("stop = %v", c.Stop)
	}
}

func TestConnzSort(t *testing.T) {
	h := newTestHandler(t, newFixture())
	tests := []struct {
		query string
		want  []uint64
	}{
		{"", []uint64{1, 2, 3, 4}},
		{"sort=cid", []uint64{1, 2, 3, 4}},
		{"sort=start", []uint64{1, 2, 3, 4}},
		{"sort=subs", []uint64{3, 1, 4, 2}},
		{"sort=pending", []uint64{2, 4, 1, 3}},
		{"sort=msgs_to", []uint64{2, 3, 4, 1}},
		{"sort=msgs_from", []uint64{1, 4, 3, 2}},
		{"sort=bytes_to", []uint64{2, 3, 4, 1}},
		{"sort=bytes_from", []uint64{4, 1, 3, 2}},
		{"sort=last", []uint64{4, 2, 1, 3}},
		{"sort=idle", []uint64{3, 1, 2, 4}},
		{"sort=uptime", []uint64{4, 3, 2, 1}},
		{"sort=rtt", []uint64{4, 2, 1, 3}},
		{"sort=stop&state=closed", []uint64{7, 6, 5}},
		{"sort=reason&state=closed", []uint64{7, 5, 6}},
		{"sort=cid&state=any", []uint64{1, 2, 3, 4, 5, 6, 7}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			cz := getStruct[Connz](t, h, "/connz?"+tc.query)
			if got := cids(cz); !slices.Equal(got, tc.want) {
				t.Fatalf("order %v, want %v", got, tc.want)
			}
		})
	}
}

func TestConnzSortTiesKeepCidOrder(t *testing.T) {
	p := newFixture()
	for i := range p.conns {
		p.conns[i].NumSubs = 7
	}
	cz := getStruct[Connz](t, newTestHandler(t, p), "/connz?sort=subs")
	if got := cids(cz); !slices.Equal(got, []uint64{1, 2, 3, 4}) {
		t.Fatalf("order %v", got)
	}
}

func TestConnzPaging(t *testing.T) {
	h := newTestHandler(t, newFixture())
	tests := []struct {
		query              string
		want               []uint64
		total, offset, lim int
	}{
		{"limit=2", []uint64{1, 2}, 4, 0, 2},
		{"offset=1&limit=2", []uint64{2, 3}, 4, 1, 2},
		{"offset=3&limit=2", []uint64{4}, 4, 3, 2},
		{"offset=10", []uint64{}, 4, 10, DefaultConnListSize},
		{"offset=-5&limit=-1", []uint64{1, 2, 3, 4}, 4, 0, DefaultConnListSize},
		{"sort=subs&offset=1&limit=2", []uint64{1, 4}, 4, 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			cz := getStruct[Connz](t, h, "/connz?"+tc.query)
			if got := cids(cz); !slices.Equal(got, tc.want) {
				t.Fatalf("page %v, want %v", got, tc.want)
			}
			require.Equal(t, cz.Total, tc.total, "total")
			require.Equal(t, cz.Offset, tc.offset, "offset")
			require.Equal(t, cz.Limit, tc.lim, "limit")
			require.Equal(t, cz.NumConns, len(tc.want), "num_connections")
		})
	}
	// An empty page is an empty list, not null.
	m := getJSON(t, h, "/connz?offset=10")
	if l, ok := m["connections"].([]any); !ok || len(l) != 0 {
		t.Fatalf("connections = %#v", m["connections"])
	}
}

func TestConnzFilters(t *testing.T) {
	h := newTestHandler(t, newFixture())
	tests := []struct {
		query string
		want  []uint64
	}{
		{"cid=3", []uint64{3}},
		{"cid=5", []uint64{}},
		{"cid=5&state=any", []uint64{5}},
		{"cid=99&state=any", []uint64{}},
		{"user=alice", []uint64{1, 3}},
		{"acc=A", []uint64{1, 4}},
		{"acc=A&user=carol", []uint64{4}},
		{"acc=$G", []uint64{3}},
		{"acc=B&state=any", []uint64{2, 5, 6, 7}},
		{"user=dave&state=closed", []uint64{5, 6, 7}},
		{"user=dave", []uint64{}},
		{"state=closed", []uint64{5, 6, 7}},
		{"state=ALL", []uint64{1, 2, 3, 4, 5, 6, 7}},
		{"state=open", []uint64{1, 2, 3, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			cz := getStruct[Connz](t, h, "/connz?"+tc.query)
			if got := cids(cz); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			require.Equal(t, cz.Total, len(tc.want), "total")
		})
	}
}

func TestConnzAuth(t *testing.T) {
	h := newTestHandler(t, newFixture())
	cz := getStruct[Connz](t, h, "/connz")
	for _, c := range cz.Conns {
		if c.AuthorizedUser != "" || c.Account != "" {
			t.Fatalf("cid %d: user %q account %q without auth", c.Cid, c.AuthorizedUser, c.Account)
		}
	}
	cz = getStruct[Connz](t, h, "/connz?auth=1")
	byCid := map[uint64]ConnInfo{}
	for _, c := range cz.Conns {
		byCid[c.Cid] = c
	}
	require.Equal(t, byCid[1].AuthorizedUser, "alice", "cid 1 user")
	require.Equal(t, byCid[1].Account, "A", "cid 1 account")
	require.
		// The global account is not named, as in nats-server.
		Equal(t, byCid[3].Account, "", "cid 3 account")
	require.Equal(t, byCid[3].AuthorizedUser, "alice", "cid 3 user")
}

func TestConnzSubs(t *testing.T) {
	p := newFixture()
	h := newTestHandler(t, p)

	cz := getStruct[Connz](t, h, "/connz?cid=1")
	if cz.Conns[0].Subs != nil || cz.Conns[0].SubsDetail != nil {
		t.Fatal("subscriptions listed without subs")
	}

	cz = getStruct[Connz](t, h, "/connz?cid=1&subs=true")
	// Sorted by sid value: 1, 2, 10.
	if got, want := cz.Conns[0].Subs, []string{"foo.one", "foo.two", "foo.ten"}; !slices.Equal(got, want) {
		t.Fatalf("subscriptions_list %v, want %v", got, want)
	}
	if cz.Conns[0].SubsDetail != nil {
		t.Fatal("detail listed with subs=true")
	}

	m := getJSON(t, h, "/connz?cid=4&subs=detail")
	c := m["connections"].([]any)[0].(map[string]any)
	requireNoKeys(t, "subs=detail", c, "subscriptions_list")
	d := c["subscriptions_list_detail"].([]any)[0].(map[string]any)
	requireKeys(t, "subscriptions_list_detail[0]", d, "subject", "qgroup", "sid", "msgs", "cid")
	requireNoKeys(t, "subscriptions_list_detail[0]", d, "account")

	cz = getStruct[Connz](t, h, "/connz?cid=1&subs=DETAIL")
	got := cz.Conns[0].SubsDetail
	if len(got) != 3 || got[0].Sid != "1" || got[0].Max != 5 || got[2].Sid != "10" || got[2].Msgs != 3 {
		t.Fatalf("detail %+v", got)
	}

	// The provider is asked for subscriptions only when they are wanted.
	p.mu.Lock()
	defer p.mu.Unlock()
	if want := []bool{false, true, true, true}; !slices.Equal(p.subsArgs, want) {
		t.Fatalf("Connections subs arguments %v, want %v", p.subsArgs, want)
	}
}

func TestConnzBadParams(t *testing.T) {
	h := newTestHandler(t, newFixture())
	tests := []struct{ query, want string }{
		{"sort=bogus", "invalid sorting option: bogus"},
		{"sort=stop", "sort by stop only valid on closed connections"},
		{"sort=reason&state=any", "sort by reason only valid on closed connections"},
		{"auth=maybe", "Error decoding boolean for 'auth': "},
		{"subs=maybe", "Error decoding boolean for 'subs': "},
		{"offset=x", "Error decoding int for 'offset': "},
		{"limit=1.5", "Error decoding int for 'limit': "},
		{"cid=-1", "Error decoding uint64 for 'cid': "},
		{"state=weird", "Error decoding state for weird"},
		// The first bad parameter in nats-server's order is reported.
		{"state=weird&auth=x", "Error decoding boolean for 'auth'"},
	}
	for _, tc := range tests {
		t.Run(tc.query, func(t *testing.T) {
			require400(t, h, "/connz?"+tc.query, tc.want)
		})
	}
}

func TestFormatRTT(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{500 * time.Nanosecond, "500ns"},
		{1234567 * time.Nanosecond, "1.234567ms"},
		{123456 * time.Nanosecond, "123µs"},
		{2 * time.Second, "2s"},
	}
	for _, tc := range tests {
		require.Equal(t, formatRTT(tc.in), tc.want, tc.in.String())
	}
}
