package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// A store directory that is a file stops Build with that cause, not with
// the first file that fails in it ("clock: clock: read state: ...: not a
// directory").
func TestBuildNamesAStoreDirThatIsAFile(t *testing.T) {
	file := writeFile(t, t.TempDir(), "afile", "x")
	c := mustParse(t, "http_port: 0\n")
	Overrides{StoreDir: ptr(file)}.Apply(c)
	c.SetDefaults(testEnv)
	_, err := Build(c, Flags{})
	require.ErrorContains(t, err, "flag --store-dir: jetstream.store_dir: "+file+" is not a directory")
	if strings.Contains(err.Error(), "clock") {
		t.Fatalf("error names the clock: %v", err)
	}
}

// JetStream's own errors keep one prefix.
func TestStartErrorHasOnePrefix(t *testing.T) {
	store := filepath.Join(t.TempDir(), "js")
	c := loopbackConfig(t, "http_port: 0\njetstream: {store_dir: '"+store+"'}\n", testEnv)
	a, err := Build(c, Flags{})
	require.NoError(t, err)
	// The streams directory turns into a file between Build and Start.
	streams := filepath.Join(store, "streams")
	require.NoError(t, os.RemoveAll(streams))
	writeFile(t, store, "streams", "x")
	err = a.Start()
	require.ErrorContains(t, err, "jetstream: ", streams)
	if strings.Contains(err.Error(), "jetstream: jetstream:") {
		t.Fatalf("prefix doubled: %v", err)
	}
}

func TestWithPrefix(t *testing.T) {
	require.DeepEqual(t, withPrefix("jetstream", errors.New("jetstream: closed")).Error(), "jetstream: closed")
	require.DeepEqual(t, withPrefix("jetstream", errors.New("store dir: x")).Error(), "jetstream: store dir: x")
	require.DeepEqual(t, withPrefix("clock", errors.New("clockwork")).Error(), "clock: clockwork")
	require.NoError(t, withPrefix("x", nil))
}
