package app

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/node"
)

// healthz GETs /healthz with query from a and returns the status code
// and the decoded document.
func healthz(t *testing.T, a *App, query string) (int, monitor.Healthz) {
	t.Helper()
	client := &http.Client{Timeout: testTimeout}
	resp, err := client.Get("http://" + a.MonitorAddr().String() + "/healthz" + query)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var hz monitor.Healthz
	if err := json.Unmarshal(body, &hz); err != nil {
		t.Fatalf("/healthz%s: %v\n%s", query, err, body)
	}
	return resp.StatusCode, hz
}

// startProbed builds and starts c with a store probe that never reuses a
// result, so each /healthz sees the directory as it is.
func startProbed(t *testing.T, c *Config) *App {
	t.Helper()
	a, err := Build(c, Flags{})
	require.NoError(t, err)
	a.probe.every = 0 // before Start: nothing reads it yet
	require.NoError(t, a.Start())
	t.Cleanup(func() { _ = a.Shutdown(t.Context()) })
	return a
}

// /healthz is unhealthy (503, the cause named) while the store directory
// takes no writes, and healthy again once it does.
func TestHealthzUnhealthyWhileTheStoreIsUnwritable(t *testing.T) {
	env := tempEnv(t)
	c := loopbackConfig(t, "http_port: -1\n", env)
	a := startProbed(t, c)
	store := c.JetStream.StoreDir

	code, hz := healthz(t, a, "")
	require.DeepEqual(t, code, http.StatusOK)
	require.DeepEqual(t, hz.Status, "ok")

	// The store directory is replaced by a file (a card remounted, a
	// directory deleted and a file written in its place).
	require.NoError(t, os.RemoveAll(store))
	writeFile(t, filepath.Dir(store), filepath.Base(store), "x")
	code, hz = healthz(t, a, "")
	require.DeepEqual(t, code, http.StatusServiceUnavailable)
	require.DeepEqual(t, hz.Status, "unavailable")
	require.DeepEqual(t, hz.Error, "store_dir "+store+" is not writable: not a directory")
	code, hz = healthz(t, a, "?details=true")
	require.DeepEqual(t, code, http.StatusServiceUnavailable)
	require.DeepEqual(t, hz.Errors[0].Type, monitor.HealthzErrorStore)
	// js-enabled-only asks only whether JetStream runs.
	code, _ = healthz(t, a, "?js-enabled-only=true")
	require.DeepEqual(t, code, http.StatusOK)

	require.NoError(t, os.Remove(store))
	require.NoError(t, os.Mkdir(store, 0o750))
	code, _ = healthz(t, a, "")
	require.DeepEqual(t, code, http.StatusOK)
}

func TestHealthzUnhealthyOnAReadOnlyStore(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes to read-only directories")
	}
	c := loopbackConfig(t, "http_port: -1\n", tempEnv(t))
	a := startProbed(t, c)
	store := c.JetStream.StoreDir
	require.NoError(t, os.Chmod(store, 0o500))
	t.Cleanup(func() { _ = os.Chmod(store, 0o750) })
	code, hz := healthz(t, a, "")
	require.DeepEqual(t, code, http.StatusServiceUnavailable)
	require.DeepEqual(t, hz.Error, "store_dir "+store+" is not writable: permission denied")
}

// A success is reused for every; a failure is not.
func TestStoreProbeCachesSuccess(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	require.NoError(t, os.Mkdir(dir, 0o750))
	now := time.Unix(1000, 0)
	p := &storeProbe{dirs: []probedDir{{"store_dir", dir}}, every: 10 * time.Second, now: func() time.Time { return now }}
	require.DeepEqual(t, len(p.check()), 0)
	require.NoError(t, os.Remove(dir))
	require.DeepEqual(t, len(p.check()), 0) // reused
	now = now.Add(10 * time.Second)
	problems := p.check()
	require.DeepEqual(t, len(problems), 1)
	require.ErrorContains(t, errorOf(problems[0]), "store_dir "+dir+" is not writable: no such file or directory")
	require.NoError(t, os.Mkdir(dir, 0o750))
	require.DeepEqual(t, len(p.check()), 0) // a failure was not reused
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.DeepEqual(t, len(entries), 0) // the probe leaves nothing behind
}

func errorOf(e monitor.HealthzError) error { return errString(e.Error) }

type errString string

func (e errString) Error() string { return string(e) }

// A stream that failed to load at start is skipped, the rest runs, and
// /healthz reports it.
func TestHealthzReportsAStreamThatFailedToLoad(t *testing.T) {
	env := tempEnv(t)
	c := loopbackConfig(t, "http_port: -1\n", env)
	a := startConfig(t, c, Flags{})
	js, err := jetstream.New(natsConnect(t, "nats://"+a.Addr().String()))
	require.NoError(t, err)
	for _, name := range []string{"GOOD", "BAD"} {
		_, err := js.CreateStream(testContext(t), jetstream.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name)}, Storage: jetstream.FileStorage})
		require.NoError(t, err)
	}
	require.NoError(t, a.Shutdown(t.Context()))
	var meta string
	_ = filepath.WalkDir(c.JetStream.StoreDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "meta.json" && filepath.Base(filepath.Dir(path)) == "BAD" {
			meta = path
		}
		return nil
	})
	if meta == "" {
		t.Fatal("no meta.json for BAD")
	}
	require.NoError(t, os.WriteFile(meta, []byte("{garbage"), 0o640))

	c = loopbackConfig(t, "http_port: -1\n", env)
	a = startConfig(t, c, Flags{})
	code, hz := healthz(t, a, "")
	require.DeepEqual(t, code, http.StatusServiceUnavailable)
	require.ErrorContains(t, errString(hz.Error), `JetStream stream "BAD" failed to load at start: meta.json: invalid character`)
	_, hz = healthz(t, a, "?details=true")
	require.DeepEqual(t, hz.Errors[0].Type, monitor.HealthzErrorStream)
	require.DeepEqual(t, hz.Errors[0].Stream, "BAD")
	// The rest runs.
	js, err = jetstream.New(natsConnect(t, "nats://"+a.Addr().String()))
	require.NoError(t, err)
	_, err = js.Stream(testContext(t), "GOOD")
	require.NoError(t, err)
}

// An uplink whose link stays down is a degraded detail (200) unless
// ?uplinks=true or healthz.uplinks_fatal makes it fatal (503).
func TestHealthzDegradedUplink(t *testing.T) {
	src := "http_port: -1\nserver_name: gw\nleafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n" +
		"uplinks: [{name: tel, subjects: [t.>], hub_subject_prefix: s.}]\n" +
		"downlinks: [{name: cmds, stream: CMDS, hub_subject_prefix: c., local_subject_prefix: cmd.}]\n"
	a := startConfig(t, loopbackConfig(t, src+"healthz: {link_down: 1ms}\n", tempEnv(t)), Flags{})
	awaitLinkDownFor(t, a, time.Millisecond)
	code, hz := healthz(t, a, "")
	require.DeepEqual(t, code, http.StatusOK)
	require.DeepEqual(t, hz.Status, "ok")
	if len(hz.Degraded) != 2 || hz.Degraded[0].Uplink != "tel" || hz.Degraded[1].Downlink != "cmds" {
		t.Fatalf("degraded %+v", hz.Degraded)
	}
	require.ErrorContains(t, errString(hz.Degraded[0].Error), "uplink tel: link connecting for")
	code, hz = healthz(t, a, "?uplinks=true")
	require.DeepEqual(t, code, http.StatusServiceUnavailable)
	require.DeepEqual(t, hz.Status, "unavailable")
	require.ErrorContains(t, errString(hz.Error), "uplink tel: link connecting for")

	fatal := startConfig(t, loopbackConfig(t, src+"healthz: {link_down: 1ms, uplinks_fatal: true}\n", tempEnv(t)), Flags{})
	awaitLinkDownFor(t, fatal, time.Millisecond)
	code, _ = healthz(t, fatal, "")
	require.DeepEqual(t, code, http.StatusServiceUnavailable)

	// With the default threshold a fresh link is not degraded.
	calm := startConfig(t, loopbackConfig(t, src, tempEnv(t)), Flags{})
	code, hz = healthz(t, calm, "?uplinks=true")
	require.DeepEqual(t, code, http.StatusOK)
	require.DeepEqual(t, len(hz.Degraded), 0)
}

// The leaf runtime's problems become /healthz degraded entries typed
// UPLINK or DOWNLINK by the one they name, text unchanged.
func TestHealthzProblems(t *testing.T) {
	got := healthzProblems([]node.Problem{
		{Uplink: "tel", Error: "uplink tel: link connecting for 20m0s (healthz.link_down 15m0s)"},
		{Downlink: "cmds", Error: "downlink cmds: link connecting for 1h0m0s (healthz.link_down 15m0s)"},
	})
	want := []monitor.HealthzError{
		{Type: monitor.HealthzErrorUplink, Uplink: "tel", Error: "uplink tel: link connecting for 20m0s (healthz.link_down 15m0s)"},
		{Type: monitor.HealthzErrorDownlink, Downlink: "cmds", Error: "downlink cmds: link connecting for 1h0m0s (healthz.link_down 15m0s)"},
	}
	require.DeepEqual(t, got, want)
	require.DeepEqual(t, healthzProblems(nil), []monitor.HealthzError(nil))
}

// awaitLinkDownFor waits until the link of a's first remote has been out
// of the connected state for longer than d: a wait on the link's status
// for the state it is in and since when, then for the instant that is d
// later (the health rule compares the wall clock with it, so time itself
// is the condition; the link never connects, so the instant stays put).
func awaitLinkDownFor(t *testing.T, a *App, d time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	link := a.node.Link(0)
	if err := link.Wait(ctx, func(st leaf.Status) bool {
		return st.State != leaf.StateConnected && !st.StateSince.IsZero()
	}); err != nil {
		t.Fatalf("the link never recorded its state: %v; %+v", err, link.Status())
	}
	time.Sleep(time.Until(link.Status().StateSince.Add(d + time.Millisecond)))
}
