package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// authExample is the example file without a jetstream block.
var authExample = filepath.Join("..", "..", "..", "deploy", "examples", "auth.yaml")

// leafbox run --config deploy/examples/auth.yaml answers JetStream
// requests in the default store directory.
func TestAppRunsJetStreamFromTheAuthExample(t *testing.T) {
	c, err := Load(authExample)
	require.NoError(t, err)
	env := tempEnv(t)
	Overrides{Host: ptr("127.0.0.1"), Port: ptr(-1), HTTPPort: ptr(0)}.Apply(c)
	c.SetDefaults(env)
	a := startConfig(t, c, Flags{})
	if a.js == nil {
		t.Fatal("JetStream is not running")
	}
	nc, err := nats.Connect("nats://"+a.Addr().String(), nats.UserInfo("admin", "change-me"), nats.Timeout(testTimeout))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx := testContext(t)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	require.DeepEqual(t, c.StreamsDir(), filepath.Join(env.StateDirectory, "streams"))
}

// The limits computed from the machine are what /jsz, $JS.API.INFO
// (nats.go's AccountInfo) and `nats account info` report; the uplinks'
// min_free_disk reserve is deducted from the file limit.
func TestStorageLimitsReported(t *testing.T) {
	const gib = 1 << 30
	env := tempEnv(t)
	env.Machine = Machine{Memory: 8 * gib, Disk: func(string) (DiskSpace, error) {
		return DiskSpace{Size: 100 * gib, Avail: 40 * gib}, nil
	}}
	c := loopbackConfig(t, `
http_port: -1
leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}
uplinks: [{name: up, subjects: [up.>], hub_subject_prefix: s.}]
`, env)
	a := startConfig(t, c, Flags{})
	wantMem, wantFile := int64(6*gib), int64(30*gib-DefaultMinFreeDisk)

	var jsz struct {
		Config struct {
			MaxMemory  int64 `json:"max_memory"`
			MaxStorage int64 `json:"max_storage"`
		} `json:"config"`
	}
	getJSON(t, "http://"+a.MonitorAddr().String()+"/jsz", &jsz)
	require.DeepEqual(t, jsz.Config.MaxMemory, wantMem)
	require.DeepEqual(t, jsz.Config.MaxStorage, wantFile)

	url := "nats://" + a.Addr().String()
	js, err := jetstream.New(natsConnect(t, url))
	require.NoError(t, err)
	info, err := js.AccountInfo(testContext(t))
	require.NoError(t, err)
	require.DeepEqual(t, info.Limits.MaxMemory, wantMem)
	require.DeepEqual(t, info.Limits.MaxStore, wantFile)

	text := string(runNatsCLI(t, url, "account", "info"))
	// The CLI rounds: 30GiB less 32MiB shows as 30 GiB.
	for _, want := range []string{"Memory: 0 B of 6.0 GiB", "Storage: 0 B of 30 GiB"} {
		if !strings.Contains(text, want) {
			t.Fatalf("nats account info lacks %q:\n%s", want, text)
		}
	}
}

// testContext is a context that ends after testTimeout or with the test.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}
