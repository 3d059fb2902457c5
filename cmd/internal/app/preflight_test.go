package app

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	requireErrorContains(t, err, "flag --store-dir: jetstream.store_dir: "+file+" is not a directory")
	if strings.Contains(err.Error(), "clock") {
		t.Fatalf("error names the clock: %v", err)
	}
}

// JetStream's own errors keep one prefix.
func TestStartErrorHasOnePrefix(t *testing.T) {
	store := filepath.Join(t.TempDir(), "js")
	c := loopbackConfig(t, "http_port: 0\njetstream: {store_dir: '"+store+"'}\n", testEnv)
	a, err := Build(c, Flags{})
	requireNoError(t, err)
	// The streams directory turns into a file between Build and Start.
	streams := filepath.Join(store, "streams")
	requireNoError(t, os.RemoveAll(streams))
	writeFile(t, store, "streams", "x")
	err = a.Start()
	requireErrorContains(t, err, "jetstream: ", streams)
	if strings.Contains(err.Error(), "jetstream: jetstream:") {
		t.Fatalf("prefix doubled: %v", err)
	}
}

func TestWithPrefix(t *testing.T) {
	requireEqual(t, withPrefix("jetstream", errors.New("jetstream: closed")).Error(), "jetstream: closed")
	requireEqual(t, withPrefix("jetstream", errors.New("store dir: x")).Error(), "jetstream: store dir: x")
	requireEqual(t, withPrefix("clock", errors.New("clockwork")).Error(), "clock: clockwork")
	requireNoError(t, withPrefix("x", nil))
}
