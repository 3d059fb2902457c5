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

func TestUplinkStatus(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	errAt := now.Add(-90 * time.Second)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != monitor.UplinkzPath {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(monitor.Uplinkz{ID: "S1", Now: now, NumUplinks: 2, Uplinks: []monitor.UplinkInfo{
			{Name: "tel", State: "backoff", LinkState: "connecting", Captured: 120, Stored: 120, Forwarded: 30, Acked: 20,
				Dropped: map[string]uint64{"limits": 3, "rejected": 2}, BacklogMsgs: 95, BacklogBytes: 1536,
				OldestAgeSeconds: 61.2, LastError: "no responders", LastErrorAt: &errAt},
			{Name: "logs", State: "forwarding", LinkState: "connected", Captured: 7, Forwarded: 7, Acked: 7},
		}, Limits: &monitor.UplinkLimits{Day: "2025-01-01", BudgetUsed: 3 << 20, DailyBudget: 3 << 20, Exhausted: true, MaxRate: 1 << 20}})
	}))
	defer srv.Close()

	stdout, stderr, code := runCLI(t, "uplink", "status", "--monitor", srv.URL+"/")
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout,
		"UPLINK", "BACKLOG", "LAST ERROR",
		"tel", "backoff", "connecting", "95", "1.5KiB", "1m1s", "5 (limits=3 rejected=2)", "no responders (1m30s ago)",
		"logs", "forwarding", "connected",
		"all uplinks: 3.0MiB sent on 2025-01-01 (UTC) of a 3.0MiB daily budget, EXHAUSTED: only the highest priority forwards, max rate 1.0MiB/s")

	// host:port without a scheme works too; a server without /uplinkz is named.
	_, stderr, code = runCLI(t, "uplink", "status", "--monitor", srv.Listener.Addr().String()+"/nope")
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "404", "not a leafbox with uplink support")

	// Nothing listening: a clear error naming the endpoint and the flag.
	addr := srv.Listener.Addr().String()
	srv.Close()
	_, stderr, code = runCLI(t, "uplink", "status", "--monitor", "http://"+addr)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "leafbox: monitoring endpoint http://"+addr+" unreachable", "--monitor")
}

func TestUplinkStatusNone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"server_id":"S1","now":"2025-01-01T00:00:00Z","num_uplinks":0,"uplinks":[]}`))
	}))
	defer srv.Close()
	stdout, stderr, code := runCLI(t, "uplink", "status", "--monitor", srv.URL)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "no uplinks running")
}

// TestUplinkStatusProgress: --progress redraws until the backlog is
// drained, then returns.
func TestUplinkStatusProgress(t *testing.T) {
	polls := []monitor.UplinkInfo{
		{Name: "bulk", State: "forwarding", LinkState: "connected", Acked: 10, BacklogMsgs: 100, BacklogBytes: 100 << 10},
		{Name: "bulk", State: "forwarding", LinkState: "connected", Acked: 70, BacklogMsgs: 40, BacklogBytes: 40 << 10,
			RateMsgs: 60, RateBytes: 60 << 10, ETASeconds: 0.7, Waiting: "rate"},
		{Name: "bulk", State: "forwarding", LinkState: "connected", Acked: 110, RateMsgs: 40, RateBytes: 40 << 10},
	}
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		u := polls[min(n, len(polls)-1)]
		n++
		_ = json.NewEncoder(w).Encode(monitor.Uplinkz{ID: "S1", NumUplinks: 1, Uplinks: []monitor.UplinkInfo{u}})
	}))
	defer srv.Close()
	stdout, stderr, code := runCLI(t, "uplink", "status", "--progress", "--interval", "5ms", "--monitor", srv.URL)
	requireCode(t, code, 0, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 3 || n != 3 {
		t.Fatalf("%d polls, output:\n%s", n, stdout)
	}
	requireContains(t, "first line", lines[0], "bulk", "[--------------------]   0%", "100 left (100.0KiB)", "ETA -")
	requireContains(t, "second line", lines[1], "[############--------]  60%", "40 left", "60 msg/s 60.0KiB/s", "ETA 1s", "held: rate")
	requireContains(t, "last line", lines[2], "[####################] 100%", "0 left (0B)")
	_, stderr, code = runCLI(t, "uplink", "status", "--progress", "--interval", "0s", "--monitor", srv.URL)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "--interval must be positive")
}

func TestUplinkStatusDownlinks(t *testing.T) {
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	errAt := now.Add(-5 * time.Second)
	uz := monitor.Uplinkz{ID: "S1", Now: now, Uplinks: []monitor.UplinkInfo{}, Downlinks: []monitor.DownlinkInfo{
		{Name: "cmds", State: "pulling", LinkState: "connected", Stream: "CMDS", Durable: "gw1_cmds",
			Delivered: 42, Acked: 41, Redelivered: 3, Failed: 2, Pending: 7, LastError: "no local subscriber", LastErrorAt: &errAt},
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(uz)
	}))
	defer srv.Close()
	stdout, stderr, code := runCLI(t, "uplink", "status", "--monitor", srv.URL)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "DOWNLINK", "cmds", "pulling", "CMDS", "gw1_cmds", "42", "no local subscriber (5s ago)")
	if strings.Contains(stdout, "no uplinks running") {
		t.Fatalf("downlinks only, yet:\n%s", stdout)
	}

	uz.NumUplinks, uz.Uplinks = 1, []monitor.UplinkInfo{{Name: "tel", State: "forwarding", LinkState: "connected"}}
	stdout, stderr, code = runCLI(t, "uplink", "status", "--monitor", srv.URL)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "UPLINK", "tel", "DOWNLINK", "cmds")
}
