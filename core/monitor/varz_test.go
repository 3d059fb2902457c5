package monitor

import (
	"runtime"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

func TestVarzFieldNames(t *testing.T) {
	h := newTestHandler(t, newFixture())
	m := getJSON(t, h, "/varz")
	// Every field NATS-COMPAT §5 lists for /varz.
	requireKeys(t, "varz", m,
		"server_id", "server_name", "version", "proto", "go", "host", "port",
		"auth_required", "tls_required", "max_connections", "ping_interval", "ping_max",
		"http_host", "http_port", "http_base_path", "https_port", "auth_timeout",
		"max_control_line", "max_payload", "max_pending", "tls_timeout", "write_deadline",
		"start", "now", "uptime", "mem", "cores", "gomaxprocs", "cpu",
		"connections", "total_connections", "routes", "remotes", "leafnodes",
		"in_msgs", "out_msgs", "in_bytes", "out_bytes", "in_client_msgs", "in_client_bytes",
		"out_client_msgs", "out_client_bytes", "slow_consumers", "stale_connections",
		"subscriptions", "http_req_stats", "config_load_time", "config_digest", "system_account",
		"leaf", "jetstream", "cluster", "gateway", "websocket", "mqtt",
		"slow_consumer_stats", "stale_connection_stats")

	leaf := object(t, m, "leaf")
	requireKeys(t, "leaf", leaf, "host", "port", "auth_timeout", "tls_timeout", "tls_required", "remotes")
	remote := leaf["remotes"].([]any)[0].(map[string]any)
	requireKeys(t, "leaf.remotes[0]", remote, "local_account", "urls")

	js := object(t, m, "jetstream")
	requireKeys(t, "jetstream", js, "config", "stats", "limits")
	requireKeys(t, "jetstream.config", object(t, js, "config"),
		"max_memory", "max_storage", "store_dir", "domain", "sync_interval")
	stats := object(t, js, "stats")
	requireKeys(t, "jetstream.stats", stats,
		"memory", "storage", "reserved_memory", "reserved_storage", "accounts", "ha_assets", "api")
	requireKeys(t, "jetstream.stats.api", object(t, stats, "api"), "level", "total", "errors")
	for _, k := range []string{"cluster", "gateway", "websocket", "mqtt"} {
		object(t, m, k) // present as objects, empty here
	}
	requireKeys(t, "slow_consumer_stats", object(t, m, "slow_consumer_stats"), "clients", "routes", "gateways", "leafs")
}

func TestVarzValues(t *testing.T) {
	h := newTestHandler(t, newFixture())
	m := getJSON(t, h, "/varz")
	require.Equal(t, m["ping_interval"], any(float64(2*time.Minute)), "ping_interval (ns)")
	require.Equal(t, m["write_deadline"], any(float64(10*time.Second)), "write_deadline (ns)")
	require.Equal(t, m["auth_timeout"], any(2.0), "auth_timeout (s)")
	require.Equal(t, m["uptime"], any("10h0m0s"), "uptime")
	require.Equal(t, m["now"], any(testNow.Format(time.RFC3339Nano)), "now")
	require.Equal(t, m["go"], any(runtime.Version()), "go")
	require.Equal(t, m["cores"], any(float64(runtime.NumCPU())), "cores")
	require.Equal(t, m["gomaxprocs"], any(float64(runtime.GOMAXPROCS(0))), "gomaxprocs")
	if mem, _ := m["mem"].(float64); mem <= 0 {
		t.Fatalf("mem = %v", m["mem"])
	}
	require.
		// The request itself is counted, as in nats-server.
		Equal(t, object(t, m, "http_req_stats")["/varz"], any(1.0), "http_req_stats")

	get(t, h, "/connz")
	get(t, h, "/subscriptionsz")
	get(t, h, "/subsz")
	v := getStruct[Varz](t, h, "/varz")
	want := map[string]uint64{"/varz": 2, "/connz": 1, "/subsz": 2}
	if len(v.HTTPReqStats) != len(want) {
		t.Fatalf("http_req_stats %v, want %v", v.HTTPReqStats, want)
	}
	for k, n := range want {
		require.Equal(t, v.HTTPReqStats[k], n, "http_req_stats["+k+"]")
	}
}

func TestVarzKeepsProviderProcessFields(t *testing.T) {
	p := newFixture()
	p.varz.Mem, p.varz.Cores, p.varz.CPU, p.varz.GoVersion = 1234, 3, 12.5, "go0"
	v := getStruct[Varz](t, newTestHandler(t, p), "/varz")
	require.Equal(t, v.Mem, int64(1234), "mem")
	require.Equal(t, v.Cores, 3, "cores")
	require.Equal(t, v.CPU, 12.5, "cpu")
	require.Equal(t, v.GoVersion, "go0", "go")
}

func TestVarzNilAndEmpty(t *testing.T) {
	p := newFixture()
	p.varz = Varz{}
	v := getStruct[Varz](t, newTestHandler(t, p), "/varz")
	require.Equal(t, v.ID, "NSERVERID", "server_id from ServerID")
	require.Equal(t, v.Uptime, "0s", "uptime without start")
	if v.SlowConsumersStats == nil || v.StaleConnectionStats == nil {
		t.Fatal("nested stats not filled")
	}
}

func TestFormatUptime(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{-time.Second, "0s"},
		{1900 * time.Millisecond, "1s"},
		{5 * time.Second, "5s"},
		{65 * time.Second, "1m5s"},
		{time.Hour, "1h0m0s"},
		{time.Hour + 2*time.Minute + 3*time.Second, "1h2m3s"},
		{day, "1d0h0m0s"},
		{2*day + time.Hour, "2d1h0m0s"},
		{365 * day, "1y0d0h0m0s"},
		{400*day + 4*time.Minute + 1*time.Second, "1y35d0h4m1s"},
		{731 * day, "2y1d0h0m0s"},
	}
	for _, tc := range tests {
		require.Equal(t, formatUptime(tc.in), tc.want, tc.in.String())
	}
}

func TestProcessSampler(t *testing.T) {
	start := time.Now()
	s := newProcessSampler(start)
	// Burn a little CPU so the first window has something to measure.
	x := 0
	for i := range 5_000_000 {
		x += i % 7
	}
	_ = x
	p := s.cpuPercent(start.Add(2 * time.Second))
	if p < 0 {
		t.Fatalf("cpu percent %v", p)
	}
	require.
		// Within the sample interval the last value is reused.
		Equal(t, s.cpuPercent(start.Add(2*time.Second+time.Millisecond)), p, "cached")
	if residentMemory() <= 0 {
		t.Fatal("resident memory not measured")
	}
}
