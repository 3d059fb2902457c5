package monitor

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// checkingProvider adds a HealthChecker that reports fixed problems and
// records the options it was called with.
type checkingProvider struct {
	*fakeProvider
	status   int
	problems []HealthzError

	mu    sync.Mutex
	calls []HealthzOptions
}

func (c *checkingProvider) CheckHealth(opts HealthzOptions) (int, []HealthzError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, opts)
	return c.status, c.problems
}

func (c *checkingProvider) lastCall(t *testing.T) HealthzOptions {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.calls) == 0 {
		t.Fatal("CheckHealth was not called")
	}
	return c.calls[len(c.calls)-1]
}

func jsNotRunning() *checkingProvider {
	return &checkingProvider{
		fakeProvider: newFixture(),
		problems:     []HealthzError{{Type: HealthzErrorJetStream, Error: JetStreamNotEnabled}},
	}
}

func TestHealthz(t *testing.T) {
	notReady := newFixture()
	notReady.readyErr = errors.New("server: not accepting connections")
	notFound := &checkingProvider{
		fakeProvider: newFixture(),
		status:       http.StatusNotFound,
		problems: []HealthzError{
			{Type: HealthzErrorStream, Account: "A", Stream: "S", Error: `JetStream stream "S" not found on account "A"`},
			{Type: HealthzErrorConsumer, Account: "A", Stream: "S", Consumer: "C", Error: "second"},
		},
	}
	tests := []struct {
		name   string
		p      Provider
		query  string
		status int
		body   string
	}{
		{"ok", newFixture(), "", 200, `{"status":"ok"}`},
		{"healthy checker", &checkingProvider{fakeProvider: newFixture()}, "", 200, `{"status":"ok"}`},
		{"js configured not running", jsNotRunning(), "", 503,
			`{"status":"unavailable","error":"JetStream not enabled"}`},
		{"js details", jsNotRunning(), "?details=true", 503,
			`{"status":"error","errors":[{"type":"JETSTREAM","error":"JetStream not enabled"}]}`},
		{"js-server-only skips checker", jsNotRunning(), "?js-server-only=true", 200, `{"status":"ok"}`},
		{"checker status code", notFound, "?account=A&stream=S", 404,
			`{"status":"unavailable","error":"JetStream stream \"S\" not found on account \"A\""}`},
		{"not ready", notReady, "", 500,
			`{"status":"error","error":"server: not accepting connections"}`},
		{"not ready details", notReady, "?details=1", 500,
			`{"status":"error","errors":[{"type":"CONNECTION","error":"server: not accepting connections"}]}`},
		{"stream without account", newFixture(), "?stream=S", 400,
			`{"status":"error","error":"\"account\" must not be empty when checking stream health"}`},
		{"consumer without stream", newFixture(), "?account=A&consumer=C", 400,
			`{"status":"error","error":"\"stream\" must not be empty when checking consumer health"}`},
		{"bad request details", newFixture(), "?stream=S&details=true", 400,
			`{"status":"error","errors":[{"type":"BAD_REQUEST","error":"\"account\" must not be empty when checking stream health"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(t, newTestHandler(t, tc.p), "/healthz"+tc.query)
			require.Equal(t, res.StatusCode, tc.status, "status")
			require.Equal(t, string(body), tc.body, "body")
			require.Equal(t, res.Header.Get("Content-Type"), "application/json", "Content-Type")
			require.Equal(t, res.Header.Get("Access-Control-Allow-Origin"), "*", "CORS")
		})
	}
}

func TestHealthzPassesOptions(t *testing.T) {
	p := &checkingProvider{fakeProvider: newFixture()}
	h := newTestHandler(t, p)
	get(t, h, "/healthz?js-enabled-only=true&js-meta-only=1&account=A&stream=S&consumer=C&details=true")
	want := HealthzOptions{JSEnabledOnly: true, JSMetaOnly: true, Account: "A", Stream: "S", Consumer: "C", Details: true}
	require.Equal(t, p.lastCall(t), want, "options")

	// js-enabled is the deprecated spelling of js-enabled-only.
	get(t, h, "/healthz?js-enabled=true")
	require.Equal(t, p.lastCall(t), HealthzOptions{JSEnabledOnly: true}, "options")
}

func TestHealthzBadParams(t *testing.T) {
	h := newTestHandler(t, newFixture())
	for _, q := range []string{"js-enabled-only", "js-server-only", "js-meta-only", "details", "js-enabled"} {
		require400(t, h, "/healthz?"+q+"=perhaps", "Error decoding boolean for '"+q+"'")
	}
}

func TestHealthzErrorTypeJSON(t *testing.T) {
	for typ := HealthzErrorConn; typ <= HealthzErrorDownlink; typ++ {
		b, err := json.Marshal(typ)
		if err != nil {
			t.Fatal(err)
		}
		if strings.ToUpper(string(b)) != string(b) || string(b) == `"unknown"` {
			t.Fatalf("%d marshals as %s", typ, b)
		}
		var back HealthzErrorType
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		require.Equal(t, back, typ, "round trip")
	}
	var typ HealthzErrorType
	if err := json.Unmarshal([]byte(`"NOPE"`), &typ); err == nil {
		t.Fatal("unknown type decoded")
	}
	require.Equal(t, HealthzErrorType(42).String(), "unknown", "out of range")
}

// degradingProvider reports fixed degraded conditions.
type degradingProvider struct {
	*checkingProvider
	degraded []HealthzError
	fatal    bool
}

func (d *degradingProvider) CheckDegraded(HealthzOptions) ([]HealthzError, bool) {
	return d.degraded, d.fatal
}

func TestHealthzDegraded(t *testing.T) {
	down := []HealthzError{{Type: HealthzErrorUplink, Uplink: "tel", Error: "link down for 20m0s"}}
	degrading := func(fatal bool) *degradingProvider {
		return &degradingProvider{checkingProvider: &checkingProvider{fakeProvider: newFixture()}, degraded: down, fatal: fatal}
	}
	storeBroken := &degradingProvider{
		checkingProvider: &checkingProvider{fakeProvider: newFixture(),
			problems: []HealthzError{{Type: HealthzErrorStore, Error: "store_dir /x is not writable"}}},
		degraded: down,
	}
	tests := []struct {
		name   string
		p      Provider
		query  string
		status int
		body   string
	}{
		{"degraded is 200", degrading(false), "", 200,
			`{"status":"ok","degraded":[{"type":"UPLINK","uplink":"tel","error":"link down for 20m0s"}]}`},
		{"uplinks=true makes it fatal", degrading(false), "?uplinks=true", 503,
			`{"status":"unavailable","error":"link down for 20m0s"}`},
		{"fatal with details", degrading(false), "?uplinks=true&details=true", 503,
			`{"status":"error","errors":[{"type":"UPLINK","uplink":"tel","error":"link down for 20m0s"}]}`},
		{"fatal by configuration", degrading(true), "", 503,
			`{"status":"unavailable","error":"link down for 20m0s"}`},
		{"js-enabled-only skips it", degrading(true), "?js-enabled-only=true", 200, `{"status":"ok"}`},
		{"js-server-only skips it", degrading(true), "?js-server-only=true", 200, `{"status":"ok"}`},
		{"unhealthy and degraded", storeBroken, "?details=true", 503,
			`{"status":"error","errors":[{"type":"STORE","error":"store_dir /x is not writable"}],"degraded":[{"type":"UPLINK","uplink":"tel","error":"link down for 20m0s"}]}`},
		{"unhealthy and degraded, fatal", storeBroken, "?details=true&uplinks=1", 503,
			`{"status":"error","errors":[{"type":"STORE","error":"store_dir /x is not writable"},{"type":"UPLINK","uplink":"tel","error":"link down for 20m0s"}]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, body := get(t, newTestHandler(t, tc.p), "/healthz"+tc.query)
			require.Equal(t, res.StatusCode, tc.status, "status")
			require.Equal(t, string(body), tc.body, "body")
		})
	}
	require400(t, newTestHandler(t, degrading(false)), "/healthz?uplinks=perhaps", "Error decoding boolean for 'uplinks'")
}
