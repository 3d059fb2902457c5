package monitor

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fixture's clock: the server started at t0 and "now" is ten hours on.
var (
	t0      = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	testNow = t0.Add(10 * time.Hour)
)

// fakeProvider is an in-memory Provider. It copies what it returns, as the
// contract requires of a real one.
type fakeProvider struct {
	id       string
	varz     Varz
	conns    []ConnSnapshot
	subs     []SubDetail
	stats    map[string]SublistStats
	accounts []string
	readyErr error

	mu       sync.Mutex
	subsArgs []bool // the subs argument of each Connections call
}

func (f *fakeProvider) ServerID() string { return f.id }

func (f *fakeProvider) Varz() *Varz {
	v := f.varz
	return &v
}

func (f *fakeProvider) Connections(state ConnState, subs bool) []ConnSnapshot {
	f.mu.Lock()
	f.subsArgs = append(f.subsArgs, subs)
	f.mu.Unlock()
	var out []ConnSnapshot
	for _, c := range f.conns {
		closed := !c.Stop.IsZero()
		if state == ConnOpen && closed || state == ConnClosed && !closed {
			continue
		}
		c.Subs = nil
		if subs {
			c.Subs = slices.Clone(f.connSubs(c.Cid))
		}
		out = append(out, c)
	}
	return out
}

// connSubs returns the fixture subscriptions of connection cid.
func (f *fakeProvider) connSubs(cid uint64) []SubDetail {
	var out []SubDetail
	for _, s := range f.subs {
		if s.Cid == cid {
			out = append(out, s)
		}
	}
	return out
}

func (f *fakeProvider) Subscriptions(account string) []SubDetail {
	var out []SubDetail
	for _, s := range f.subs {
		if account == "" || s.Account == account {
			out = append(out, s)
		}
	}
	return out
}

func (f *fakeProvider) SublistStats(account string) SublistStats {
	if account != "" {
		return f.stats[account]
	}
	var sum SublistStats
	for _, s := range f.stats {
		sum.NumSubs += s.NumSubs
		sum.NumInserts += s.NumInserts
		sum.NumMatches += s.NumMatches
	}
	return sum
}

func (f *fakeProvider) Accounts() []string { return slices.Clone(f.accounts) }

func (f *fakeProvider) Ready() error { return f.readyErr }

// newFixture returns a provider with four open connections (cids 1-4) and
// three closed ones (5-7) whose values give every sort key a distinct
// order, and subscriptions in accounts $G, A and B.
func newFixture() *fakeProvider {
	open := func(cid uint64, start, idle time.Duration, subs, pending int, in, out, inB, outB int64, rtt time.Duration, user, acc string) ConnSnapshot {
		return ConnSnapshot{
			Cid: cid, IP: "127.0.0.1", Port: 50000 + int(cid),
			Start: t0.Add(start), LastActivity: testNow.Add(-idle),
			NumSubs: subs, Pending: pending,
			InMsgs: in, OutMsgs: out, InBytes: inB, OutBytes: outB,
			RTT: rtt, User: user, Account: acc,
			Name: "c" + string(rune('0'+cid)), Lang: "go", Version: "1.55.0",
		}
	}
	closed := func(cid uint64, start, last, stop time.Duration, reason string) ConnSnapshot {
		return ConnSnapshot{
			Cid: cid, IP: "127.0.0.1", Port: 50000 + int(cid),
			Start: t0.Add(start), LastActivity: t0.Add(last), Stop: t0.Add(stop),
			Reason: reason, User: "dave", Account: "B", Lang: "go",
		}
	}
	return &fakeProvider{
		id: "NSERVERID",
		varz: Varz{
			ID: "NSERVERID", Name: "edge-1", Version: "0.1.0", Proto: 1,
			Host: "0.0.0.0", Port: 4222, AuthRequired: true, TLSRequired: true,
			MaxConn: 65536, PingInterval: 2 * time.Minute, MaxPingsOut: 2,
			AuthTimeout: 2, MaxControlLine: 4096, MaxPayload: 1 << 20, MaxPending: 64 << 20,
			TLSTimeout: 2, WriteDeadline: 10 * time.Second, Start: t0,
			Connections: 4, TotalConnections: 7, Leafs: 1,
			InMsgs: 130, OutMsgs: 75, InBytes: 1500, OutBytes: 740,
			SlowConsumers: 1, StaleConnections: 2, Subscriptions: 6,
			ConfigLoadTime: t0, ConfigDigest: "sha256:abc", SystemAccount: "SYS",
			LeafNode: LeafNodeVarz{
				Host: "0.0.0.0", Port: 7422, AuthTimeout: 2, TLSTimeout: 2, TLSRequired: true,
				Remotes: []RemoteLeafVarz{{LocalAccount: "A", URLs: []string{"nats-leaf://hub:7422"}}},
			},
			JetStream: JetStreamVarz{
				Config: &JetStreamConfig{MaxMemory: 1 << 30, MaxStore: 1 << 34, StoreDir: "/var/lib/leafbox", Domain: "edge", SyncInterval: 2 * time.Minute},
				Stats:  &JetStreamStats{API: JetStreamAPIStats{Level: 1}},
				Limits: &JetStreamLimits{},
			},
		},
		conns: []ConnSnapshot{
			// Deliberately out of cid order.
			open(3, 3*time.Hour, 30*time.Minute, 5, 0, 30, 20, 300, 200, 1*time.Millisecond, "alice", globalAccount),
			open(1, 1*time.Hour, 5*time.Minute, 3, 10, 50, 5, 500, 40, 2*time.Millisecond, "alice", "A"),
			open(4, 4*time.Hour, 10*time.Second, 2, 20, 40, 10, 600, 100, 10*time.Millisecond, "carol", "A"),
			open(2, 2*time.Hour, 1*time.Minute, 1, 30, 10, 40, 100, 400, 5*time.Millisecond, "bob", "B"),
			closed(6, 6*time.Hour, 6*time.Hour+59*time.Minute, 7*time.Hour, "Slow Consumer (Pending Bytes)"),
			closed(5, 30*time.Minute, 4*time.Hour+30*time.Minute, 5*time.Hour, "Client Closed"),
			closed(7, 1*time.Hour, 8*time.Hour, 9*time.Hour, "Authentication Failure"),
		},
		subs: []SubDetail{
			{Account: "A", Subject: "foo.ten", Sid: "10", Cid: 1, Msgs: 3},
			{Account: "A", Subject: "foo.two", Sid: "2", Cid: 1},
			{Account: "A", Subject: "foo.one", Sid: "1", Cid: 1, Max: 5},
			{Account: "A", Subject: "foo.*", Queue: "q1", Sid: "1", Cid: 4},
			{Account: "B", Subject: "bar.>", Sid: "1", Cid: 2},
			{Account: globalAccount, Subject: ">", Sid: "1", Cid: 3},
		},
		stats: map[string]SublistStats{
			"A":           {NumSubs: 4, NumInserts: 4, NumMatches: 10},
			"B":           {NumSubs: 1, NumInserts: 1},
			globalAccount: {NumSubs: 1, NumInserts: 2, NumMatches: 1},
		},
		accounts: []string{"B", "SYS", "A", globalAccount},
	}
}

// newTestHandler returns the monitor over p with its clock fixed at testNow.
func newTestHandler(t *testing.T, p Provider) *handler {
	t.Helper()
	h := NewHandler(p).(*handler)
	h.now = func() time.Time { return testNow }
	return h
}

// get performs a GET of target on h and returns the response and body.
func get(t *testing.T, h http.Handler, target string) (*http.Response, []byte) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
	res := rec.Result()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: reading body: %v", target, err)
	}
	return res, body
}

// getJSON performs a GET that must answer 200 with JSON and decodes it.
func getJSON(t *testing.T, h http.Handler, target string) map[string]any {
	t.Helper()
	res, body := get(t, h, target)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, body %q", target, res.StatusCode, body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("GET %s: Content-Type %q", target, ct)
	}
	return decode(t, body)
}

// getStruct performs a GET that must answer 200 and decodes it into T.
func getStruct[T any](t *testing.T, h http.Handler, target string) T {
	t.Helper()
	res, body := get(t, h, target)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d, body %q", target, res.StatusCode, body)
	}
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("GET %s: %v in %s", target, err, body)
	}
	return v
}

func decode(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	return m
}

// requireKeys fails unless m has every key.
func requireKeys(t *testing.T, what string, m map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			t.Errorf("%s: missing key %q; have %v", what, k, sortedKeys(m))
		}
	}
}

// requireNoKeys fails if m has any of keys.
func requireNoKeys(t *testing.T, what string, m map[string]any, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, ok := m[k]; ok {
			t.Errorf("%s: unexpected key %q", what, k)
		}
	}
}

// object returns m[key] as a JSON object.
func object(t *testing.T, m map[string]any, key string) map[string]any {
	t.Helper()
	o, ok := m[key].(map[string]any)
	if !ok {
		t.Fatalf("key %q is %T, not an object", key, m[key])
	}
	return o
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// require400 fails unless target answers 400 with a body containing want.
func require400(t *testing.T, h http.Handler, target, want string) {
	t.Helper()
	res, body := get(t, h, target)
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("GET %s: status %d, want 400; body %q", target, res.StatusCode, body)
	}
	if !strings.Contains(string(body), want) {
		t.Fatalf("GET %s: body %q does not contain %q", target, body, want)
	}
	if got := res.Header.Get("Access-Control-Allow-Origin"); got != "*" {
		t.Fatalf("GET %s: CORS header %q", target, got)
	}
}
