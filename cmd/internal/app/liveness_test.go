package app

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
)

// The liveness check passes while the broker routes and the store takes
// writes, names the store when it does not, and fails once the broker
// shuts down; its probes reach no subscriber of the configured accounts.
func TestLivenessCheck(t *testing.T) {
	c := loopbackConfig(t, "http_port: 0\n", tempEnv(t))
	a := startProbed(t, c)
	lv, err := a.Liveness()
	require.NoError(t, err)
	t.Cleanup(lv.Close)

	var seen atomic.Int64
	watcher := a.srv.InProcess("")
	t.Cleanup(watcher.Close)
	_, err = watcher.Subscribe(">", "", func(server.Msg) { seen.Add(1) })
	require.NoError(t, err)
	for range 3 {
		require.NoError(t, lv.Check())
	}
	require.DeepEqual(t, seen.Load(), int64(0))

	store := c.JetStream.StoreDir
	require.NoError(t, os.RemoveAll(store))
	writeFile(t, filepath.Dir(store), filepath.Base(store), "x")
	require.ErrorContains(t, lv.Check(), "store_dir "+store+" is not writable: not a directory")
	require.NoError(t, os.Remove(store))
	require.NoError(t, os.Mkdir(store, 0o750))
	require.NoError(t, lv.Check())

	require.NoError(t, a.Shutdown(context.Background()))
	require.ErrorContains(t, lv.Check(), "broker: server is shutting down")
}
