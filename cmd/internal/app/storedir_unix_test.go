//go:build unix

package app

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nats.go/jetstream"
)

// TestStoreIsPrivate runs a gateway with a file stream, a durable
// consumer and an uplink under the usual umask 022, stops it, and checks
// that nothing in the store directory is readable by other users or
// writable by the group: files 0640, directories 0750.
func TestStoreIsPrivate(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	ctx, cancel := context.WithTimeout(context.Background(), 2*testTimeout)
	defer cancel()
	root := filepath.Join(t.TempDir(), "store")
	c := loopbackConfig(t, "http_port: 0\nserver_name: gw1\n"+
		"jetstream: {store_dir: '"+root+"'}\n"+
		"leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"+
		"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1.}]\n", Env{})
	require.NoError(t, c.Validate())
	a := startConfig(t, c, Flags{})
	gw := natsConnect(t, "nats://"+a.Addr().String())
	js, err := jetstream.New(gw)
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	_, err = js.CreateConsumer(ctx, "S", jetstream.ConsumerConfig{Durable: "D", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "s.x", []byte("m"))
	require.NoError(t, err)
	require.NoError(t, gw.Publish("telemetry.x", []byte("m")))
	require.NoError(t, gw.Flush())
	require.NoError(t, a.Shutdown(ctx))

	var seen []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		seen = append(seen, rel)
		want := fs.FileMode(0o640)
		switch {
		case d.IsDir():
			want = 0o750
		case rel == filepath.Join("state", "identity.nk"):
			want = 0o600 // a secret: the gateway's NKey seed
		}
		if m := fi.Mode().Perm(); m != want {
			t.Errorf("%s: mode %o, want %o", rel, m, want)
		}
		return nil
	})
	require.NoError(t, err)
	// (The state files are written only once there is state to keep;
	// store/vfs tests the mode WriteFile gives them.)
	for _, want := range []string{"LOCK", "streams/S/meta.json", "streams/S/msgs/0000000001.blk",
		"streams/S/obs/D/meta.json", "streams/S/obs/D/consumer.log", "outbox/tel/0000000001.blk", "state", "deadletter"} {
		if !slices.Contains(seen, want) {
			t.Errorf("%s not written; the store holds %s", want, strings.Join(seen, " "))
		}
	}
}
