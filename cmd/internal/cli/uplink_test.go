package cli

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
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
		}})
	}))
	defer srv.Close()

	stdout, stderr, code := runCLI(t, "uplink", "status", "--monitor", srv.URL+"/")
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout,
		"UPLINK", "BACKLOG", "LAST ERROR",
		"tel", "backoff", "connecting", "95", "1.5KiB", "1m1s", "5 (limits=3 rejected=2)", "no responders (1m30s ago)",
		"logs", "forwarding", "connected")

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
