package app

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/leafbox/leafbox/core/server"
)

// The liveness check passes while the broker routes and the store takes
// writes, names the store when it does not, and fails once the broker
// shuts down; its probes reach no subscriber of the configured accounts.
func TestLivenessCheck(t *testing.T) {
	c := loopbackConfig(t, "http_port: 0\n", tempEnv(t))
	a := startProbed(t, c)
	lv, err := a.Liveness()
	requireNoError(t, err)
	t.Cleanup(lv.Close)

	var seen atomic.Int64
	watcher := a.srv.InProcess("")
	t.Cleanup(watcher.Close)
	_, err = watcher.Subscribe(">", "", func(server.Msg) { seen.Add(1) })
	requireNoError(t, err)
	for range 3 {
		requireNoError(t, lv.Check())
	}
	requireEqual(t, seen.Load(), int64(0))

	store := c.JetStream.StoreDir
	requireNoError(t, os.RemoveAll(store))
	writeFile(t, filepath.Dir(store), filepath.Base(store), "x")
	requireErrorContains(t, lv.Check(), "store_dir "+store+" is not writable: not a directory")
	requireNoError(t, os.Remove(store))
	requireNoError(t, os.Mkdir(store, 0o750))
	requireNoError(t, lv.Check())

	requireNoError(t, a.Shutdown(context.Background()))
	requireErrorContains(t, lv.Check(), "broker: server is shutting down")
}
