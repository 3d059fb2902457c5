package jetstream

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
)

// metaPath finds the meta.json of the stream (or consumer) directory
// called name under root, wherever the store layout puts it.
func metaPath(t *testing.T, root, name string) string {
	t.Helper()
	var found string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == metaFile && filepath.Base(filepath.Dir(path)) == name {
			found = path
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no %s for %s under %s", metaFile, name, root)
	}
	return found
}

// A stream or consumer that fails to load at start is skipped so the
// rest runs, and reported by RestoreFailures.
func TestRestoreFailuresAreRecorded(t *testing.T) {
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	for _, name := range []string{"GOOD", "BAD"} {
		_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: name, Subjects: []string{strings.ToLower(name) + ".>"}, Storage: njs.FileStorage})
		require.NoError(t, err)
	}
	_, err := env.js.CreateOrUpdateConsumer(ctx, "GOOD", njs.ConsumerConfig{Durable: "C", AckPolicy: njs.AckExplicitPolicy})
	require.NoError(t, err)
	_, err = env.js.CreateOrUpdateConsumer(ctx, "GOOD", njs.ConsumerConfig{Durable: "D", AckPolicy: njs.AckExplicitPolicy})
	require.NoError(t, err)
	require.Equal(t, len(env.eng.RestoreFailures()), 0)
	require.NoError(t, env.eng.Close())
	require.NoError(t, os.WriteFile(metaPath(t, env.cfg.StoreDir, "BAD"), []byte("{garbage"), 0o600))
	require.NoError(t, os.WriteFile(metaPath(t, env.cfg.StoreDir, "D"), []byte("{garbage"), 0o600))
	env.startEngine()

	failures := env.eng.RestoreFailures()
	if len(failures) != 2 {
		t.Fatalf("failures %+v, want BAD and GOOD > D", failures)
	}
	byName := map[string]RestoreFailure{}
	for _, f := range failures {
		byName[f.Stream+"/"+f.Consumer] = f
	}
	if f, ok := byName["BAD/"]; !ok || !strings.Contains(f.Err.Error(), metaFile) {
		t.Fatalf("BAD not reported: %+v", failures)
	}
	if _, ok := byName["GOOD/D"]; !ok {
		t.Fatalf("consumer D not reported: %+v", failures)
	}
	// The rest runs.
	info, err := env.js.Stream(ctx, "GOOD")
	require.NoError(t, err)
	require.Equal(t, info.CachedInfo().Config.Name, "GOOD")
	_, err = env.js.Consumer(ctx, "GOOD", "C")
	require.NoError(t, err)
}
