package jetstream

import (
	"strings"
	"testing"
	"time"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// TestDirectGetKVWatcherAndCLI checks that KV, which reads through direct
// gets, keeps working: a nats.go watcher sees the current values, the end
// of the initial values and then live updates; the pinned nats CLI reads
// keys, history and key lists.
func TestDirectGetKVWatcherAndCLI(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	kv, err := env.js.CreateKeyValue(ctx, njs.KeyValueConfig{Bucket: "cfg", History: 5})
	require.NoError(t, err)
	for _, kvp := range [][2]string{{"a", "1"}, {"b", "1"}, {"a", "2"}, {"c.d", "1"}} {
		_, err := kv.Put(ctx, kvp[0], []byte(kvp[1]))
		require.NoError(t, err)
	}
	w, err := kv.WatchAll(ctx)
	require.NoError(t, err)
	defer w.Stop()
	next := func() njs.KeyValueEntry {
		t.Helper()
		select {
		case e := <-w.Updates():
			return e
		case <-time.After(5 * time.Second):
			t.Fatal("watcher: no update")
			return nil
		}
	}
	var initial []string
	for e := next(); e != nil; e = next() {
		initial = append(initial, e.Key()+"="+string(e.Value()))
	}
	require.Equal(t, strings.Join(initial, " "), "b=1 a=2 c.d=1")
	_, err = kv.Put(ctx, "b", []byte("2"))
	require.NoError(t, err)
	if e := next(); e.Key() != "b" || string(e.Value()) != "2" || e.Revision() != 5 {
		t.Fatalf("live update: %s=%s rev %d", e.Key(), e.Value(), e.Revision())
	}

	url := env.srv.ClientURL()
	out, err := runNATS(t, url, "kv", "get", "cfg", "a", "--raw")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(out), "2")
	out, err = runNATS(t, url, "kv", "history", "cfg", "a")
	require.NoError(t, err)
	if strings.Count(out, "PUT") != 2 {
		t.Fatalf("nats kv history:\n%s", out)
	}
	out, err = runNATS(t, url, "kv", "ls", "cfg")
	require.NoError(t, err)
	for _, k := range []string{"a", "b", "c.d"} {
		if !strings.Contains(out, k) {
			t.Fatalf("nats kv ls cfg misses %s:\n%s", k, out)
		}
	}
}
