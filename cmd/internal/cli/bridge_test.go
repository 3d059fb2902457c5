package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/monitor"
)

func TestBridgeStatus(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	errAt := now.Add(-90 * time.Second)
	doc := monitor.Bridgez{ID: "S1", Now: now, NumBridges: 2, Bridges: []monitor.BridgeInfo{
		{Kind: "mqtt", Name: "site", State: "disconnected", Since: now.Add(-time.Minute), In: 120, Out: 7, Reconnects: 2,
			Drops:     map[string]uint64{"bad_frame": 0, "not_connected": 3, "rejected": 1, "too_large": 0, "queue_full": 0},
			LastError: "dial tcp 10.0.0.5:1883: connection refused", LastErrorAt: &errAt, LastErrorAgeSeconds: 90},
		{Kind: "serial", Name: "gps", Account: "ops", State: "connected", Since: now.Add(-2 * time.Hour), In: 5, BadFrames: 1,
			Drops: map[string]uint64{"bad_frame": 1, "not_connected": 0, "rejected": 0, "too_large": 0, "queue_full": 0}},
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != monitor.BridgezPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	defer srv.Close()

	stdout, stderr, code := runCLI(t, "bridge", "status", "--monitor", srv.URL)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout,
		"KIND", "NAME", "ACCOUNT", "STATE", "SINCE", "IN", "OUT", "BAD FRAMES", "RECONNECTS", "DROPPED", "LAST ERROR",
		"mqtt", "site", "disconnected", "1m0s", "120", "4 (not_connected=3 rejected=1)",
		"dial tcp 10.0.0.5:1883: connection refused (1m30s ago)",
		"serial", "gps", "ops", "connected", "2h0m0s", "1 (bad_frame=1)")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "mqtt") || !strings.HasPrefix(lines[2], "serial") {
		t.Fatalf("want a header and one line per bridge in order, got:\n%s", stdout)
	}

	// --json: the document as served.
	stdout, stderr, code = runCLI(t, "bridge", "status", "--json", "--monitor", srv.Listener.Addr().String())
	requireCode(t, code, 0, stderr)
	var got monitor.Bridgez
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("--json printed no JSON: %v\n%s", err, stdout)
	}
	if got.NumBridges != 2 || got.Bridges[0].Drops["not_connected"] != 3 || got.Bridges[1].Account != "ops" {
		t.Fatalf("--json printed %+v", got)
	}

	// A server without /bridgez is named; nothing listening is a clear error.
	_, stderr, code = runCLI(t, "bridge", "status", "--monitor", srv.URL+"/nope")
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "404", "not a leafbox with bridge support")
	addr := srv.Listener.Addr().String()
	srv.Close()
	_, stderr, code = runCLI(t, "bridge", "status", "--monitor", "http://"+addr)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "monitoring endpoint http://"+addr+" unreachable", "--monitor")
}

func TestBridgeStatusNone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"server_id":"S1","now":"2026-12-01T00:00:00Z","num_bridges":0,"bridges":[]}`))
	}))
	defer srv.Close()
	stdout, stderr, code := runCLI(t, "bridge", "status", "--monitor", srv.URL)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "no bridges running")

	// An answer that is not /bridgez's shape is refused.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"server_id":"S1"}`))
	}))
	defer bad.Close()
	_, stderr, code = runCLI(t, "bridge", "status", "--monitor", bad.URL)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "lists no bridges field")
}
