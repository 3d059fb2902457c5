package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/leaf/leaftest"
	lbjs "github.com/leafbox/leafbox/store/jetstream"
	"github.com/leafbox/leafbox/store/storedir"
)

// writeOldStream writes a file stream named name with msgs messages on
// subject subj (ending in ">") the way leafbox did before the store had subtrees: the
// JetStream engine's directory was the store directory itself, so the
// stream lives in <root>/<name>/.
func writeOldStream(t *testing.T, root, name, subj string, msgs int) {
	t.Helper()
	srv := servertest.Start(t, server.Options{})
	conn := srv.InProcess("")
	defer conn.Close()
	eng, err := lbjs.New(lbjs.Config{StoreDir: root}, busConn{conn})
	require.NoError(t, err)
	require.NoError(t, eng.Start())
	nc, err := nats.Connect(srv.ClientURL(), nats.NoReconnect())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	for i := range msgs {
		_, err := js.Publish(ctx, subj[:len(subj)-1]+"x", []byte("old"+strconv.Itoa(i)))
		require.NoError(t, err)
	}
	nc.Close()
	require.NoError(t, eng.Close())
	if _, err := os.Stat(filepath.Join(root, name, "meta.json")); err != nil {
		t.Fatalf("old layout not written: %v", err)
	}
}

// TestOldLayoutStreamNamedOutbox starts a gateway on a store written by
// the old layout, where a stream named "outbox" sat at <store>/outbox
// beside the uplink outboxes, with an uplink named "msgs" (whose outbox
// was the stream's block directory <store>/outbox/msgs). The store is
// migrated on start: the stream keeps its messages under streams/, and
// the uplink gets an outbox of its own and forwards every new message to
// the hub exactly once.
func TestOldLayoutStreamNamedOutbox(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*testTimeout)
	defer cancel()
	root := t.TempDir()
	writeOldStream(t, root, "outbox", "local.>", 3)

	hub, _, site := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-layout"}, "",
		jetstream.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}})
	c := loopbackConfig(t, "http_port: 0\nserver_name: gw1\n"+
		"jetstream: {store_dir: '"+root+"'}\n"+
		"leafnodes: {remotes: [{url: '"+hub.LeafURL()+"'}]}\n"+
		"uplinks: [{name: msgs, subjects: [telemetry.>], hub_subject_prefix: site1., stream: SITE}]\n", Env{})
	require.NoError(t, c.Validate())
	a := startConfig(t, c, Flags{})

	gw := natsConnect(t, "nats://"+a.Addr().String())
	const n = 5
	for i := range n {
		require.NoError(t, gw.Publish("telemetry.t", []byte(strconv.Itoa(i))))
	}
	require.NoError(t, gw.Flush())
	awaitStreamMsgs(t, ctx, site, n, func() string { return "" })
	awaitUplinkAcked(t, ctx, a, n)

	js, err := jetstream.New(gw)
	require.NoError(t, err)
	s, err := js.Stream(ctx, "outbox")
	require.NoError(t, err)
	if st := s.CachedInfo().State; st.Msgs != 3 {
		t.Fatalf("stream outbox after the migration: %+v", st)
	}
	for _, p := range []string{"streams/outbox/meta.json", "streams/outbox/msgs", "outbox/msgs", "state", "LOCK"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Errorf("new layout: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "outbox", "meta.json")); err == nil {
		t.Errorf("the stream's meta file is still in the outbox root")
	}
}

// TestBuildTakesTheStoreDir: while one App holds a store directory a
// second Build on it fails naming the directory and this process's pid,
// and after Shutdown (or a failed Build) the directory is free again.
func TestBuildTakesTheStoreDir(t *testing.T) {
	root := t.TempDir()
	src := "http_port: 0\njetstream: {store_dir: '" + root + "'}\n"
	a := startConfig(t, loopbackConfig(t, src, Env{}), Flags{})
	_, err := Build(loopbackConfig(t, src, Env{}), Flags{})
	var inUse *storedir.InUseError
	if !errors.As(err, &inUse) || inUse.PID != os.Getpid() || inUse.Dir != root {
		t.Fatalf("second Build: %v", err)
	}
	require.ErrorContains(t, err, "store dir "+root+" is in use by pid "+strconv.Itoa(os.Getpid()))
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, a.Shutdown(ctx))

	// A Build that fails after taking the directory gives it back.
	writeFile(t, filepath.Join(root, "state"), "clock.json", "{garbage")
	for range 2 {
		_, err = Build(loopbackConfig(t, src, Env{}), Flags{})
		require.ErrorContains(t, err, "clock: ")
	}
	require.NoError(t, os.Remove(filepath.Join(root, "state", "clock.json")))
	startConfig(t, loopbackConfig(t, src, Env{}), Flags{})
}
