package node

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/clock"
	"github.com/leafbox/leafbox/leaf/downlink"
	"github.com/leafbox/leafbox/leaf/leaftest"
	"github.com/leafbox/leafbox/leaf/outbox"
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// TestNodeUplinkAndDownlink runs a Node over a real broker toward a real
// nats-server hub with JetStream, without any configuration file: a
// captured message reaches the hub stream through the uplink, a hub
// command reaches a local subscriber through the downlink, /leafz lists
// the link, and Detach then Close stop it all.
func TestNodeUplinkAndDownlink(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hub := leaftest.StartHub(t, leaftest.HubOptions{Name: "hub-node",
		Config: fmt.Sprintf("jetstream { store_dir: %q, domain: hub }\n", t.TempDir())})
	hc, err := nats.Connect(hub.ClientURL())
	require.NoError(t, err)
	t.Cleanup(hc.Close)
	hjs, err := njs.New(hc)
	require.NoError(t, err)
	site, err := hjs.CreateStream(ctx, njs.StreamConfig{Name: "SITE", Subjects: []string{"site1.>"}})
	require.NoError(t, err)
	_, err = hjs.CreateStream(ctx, njs.StreamConfig{Name: "CMDS", Subjects: []string{"cmd.site1.>"}})
	require.NoError(t, err)

	srv := servertest.Start(t, server.Options{ServerName: "gw-node"})
	dir := t.TempDir()
	n, err := New(Config{
		ServerID:   srv.ID(),
		ServerName: srv.Name(),
		Remotes:    []RemoteConfig{{Link: leaf.Config{URLs: []string{hub.LeafURL()}, Name: srv.Name()}, ShownURLs: []string{hub.LeafURL()}}},
		Uplinks: []UplinkConfig{{
			Subjects: []string{"telemetry.>"}, Dir: filepath.Join(dir, "outbox"), DeadLetterDir: filepath.Join(dir, "dead"),
			Store: store.Config{Name: "tel"}, MinFreeDisk: 1,
			Outbox: outbox.Config{Name: "tel", HubPrefix: "site1.", Stream: "SITE", StateFile: filepath.Join(dir, "tel.json")},
		}},
		OpenStream: openTestStream,
		Limits:     LimitsConfig{StateDir: filepath.Join(dir, "state"), StateFile: filepath.Join(dir, "state", "scheduler.json")},
		Downlinks: []DownlinkConfig{{Config: downlink.Config{Name: "cmds", Stream: "CMDS", Durable: "gw_cmds", Domain: "hub",
			FilterSubjects: []string{"cmd.site1.>"}, HubPrefix: "cmd.site1.", LocalPrefix: "cmd."}}},
	}, &testBroker{srv: srv}, nil)
	require.NoError(t, err)
	clk, err := clock.Open(clock.Config{})
	require.NoError(t, err)
	require.NoError(t, n.Start(clk))
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = n.Detach(context.Background())
			_ = n.Close()
		}
		_ = clk.Close()
	})
	require.NoError(t, n.Link(0).WaitConnected(ctx))

	gw, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(gw.Close)
	cmds, err := gw.SubscribeSync("cmd.>")
	require.NoError(t, err)
	require.NoError(t, gw.Publish("telemetry.t1", []byte("21.5")))
	require.NoError(t, gw.Flush()) // the PONG: captured and synced
	if err := n.WaitUplink(ctx, 0, func(st outbox.Status) bool { return st.Acked == 1 && st.BacklogMsgs == 0 }); err != nil {
		t.Fatalf("waiting until the uplink's message is acked: %v; uplink %+v", err, n.UplinkStatus())
	}
	m, err := site.GetMsg(ctx, 1)
	require.NoError(t, err)
	require.DeepEqual(t, m.Subject, "site1.telemetry.t1")
	require.DeepEqual(t, string(m.Data), "21.5")

	_, err = hjs.Publish(ctx, "cmd.site1.door", []byte("open"))
	require.NoError(t, err)
	got, err := cmds.NextMsg(30 * time.Second)
	require.NoError(t, err)
	require.DeepEqual(t, got.Subject, "cmd.door")
	require.DeepEqual(t, string(got.Data), "open")
	if err := n.WaitDownlink(ctx, 0, func(st downlink.Status) bool { return st.Acked == 1 }); err != nil {
		t.Fatalf("waiting until the downlink's message is acked: %v; downlink %+v", err, n.DownlinkStatus())
	}

	leafs := n.Leafs(true)
	if len(leafs) != 1 || leafs[0].ID != 1 || !leafs[0].IsSpoke {
		t.Fatalf("Leafs: %+v", leafs)
	}

	require.NoError(t, n.Detach(ctx))
	require.DeepEqual(t, n.Link(0).Status().State, leaf.StateClosed)
	require.DeepEqual(t, len(n.DownlinkStatus()), 0)
	require.NoError(t, n.Close())
	stopped = true
	require.DeepEqual(t, len(n.UplinkStatus()), 0)
	require.NoError(t, n.Detach(ctx)) // idempotent
	require.NoError(t, n.Close())
}

// openTestStream is the StreamOpener the node's tests inject: filestore
// streams, as the gateway's.
func openTestStream(dir string, cfg store.Config, syncInterval time.Duration) (store.Stream, error) {
	return filestore.Open(vfs.OS, dir, filestore.Config{Config: cfg, SyncInterval: syncInterval})
}
