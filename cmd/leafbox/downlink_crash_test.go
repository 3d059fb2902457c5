//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestDownlinkSurvivesKill9 kills the gateway with SIGKILL while its
// downlink delivers a backlog of hub commands into a local stream, and
// starts it again: the local stream ends up with every command exactly
// once, in hub order. Commands stored locally whose ack the dead process
// never sent come again from the hub and are dropped by the local
// stream's duplicate window (Nats-Msg-Id <downlink>.<stream>.<seq>).
func TestDownlinkSurvivesKill9(t *testing.T) {
	const n = 500
	ctx := testContext(t)
	hub, hjs, _ := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-dl"},
		jetstream.StreamConfig{Name: "CMDS", Subjects: []string{"cmd.>"}, Storage: jetstream.FileStorage})
	for i := range n {
		_, err := hjs.PublishAsync("cmd.site1.c"+strconv.Itoa(i%5), []byte(strconv.Itoa(i)))
		require.NoError(t, err)
	}
	select {
	case <-hjs.PublishAsyncComplete():
	case <-ctx.Done():
		t.Fatal("hub publishes not acknowledged")
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "leafbox.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `server_name: gw1
listen: 127.0.0.1
port: -1
http_port: 0
jetstream:
  store_dir: %q
  domain: edge
leafnodes:
  remotes:
    - url: %q
downlinks:
  - name: cmds
    stream: CMDS
    filter_subjects: [cmd.site1.>]
    hub_subject_prefix: cmd.site1.
    local_subject_prefix: local.
    ack_wait: 2s
`, filepath.Join(dir, "state"), hub.LeafURL()), 0o600))

	p, gwURL := startJS(t, cfg, dir)
	_, ljs := jsConnect(t, gwURL)
	local, err := ljs.CreateStream(ctx, jetstream.StreamConfig{Name: "LOCAL", Subjects: []string{"local.>"}, Duplicates: 10 * time.Minute})
	require.NoError(t, err)
	localMsgs := func(s jetstream.Stream) uint64 {
		t.Helper()
		info, err := s.Info(ctx)
		require.NoError(t, err)
		return info.State.Msgs
	}
	waitLocal := func(s jetstream.Stream, cond func(uint64) bool) uint64 {
		t.Helper()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if got := localMsgs(s); cond(got) {
				return got
			}
			select {
			case <-ctx.Done():
				t.Fatalf("local stream holds %d; log:\n%s", localMsgs(s), p.log())
			case <-tick.C:
			}
		}
	}
	before := waitLocal(local, func(got uint64) bool { return got >= n/5 })
	require.NoError(t, p.cmd.Process.Kill())
	p.wait()
	t.Logf("local stream held at least %d of %d commands when the gateway died", before, n)
	killed := time.Now()

	p, gwURL = startJS(t, cfg, dir)
	_, ljs = jsConnect(t, gwURL)
	local, err = ljs.Stream(ctx, "LOCAL")
	require.NoError(t, err)
	cons, err := hjs.Consumer(ctx, "CMDS", "gw1_cmds")
	require.NoError(t, err)
	waitLocal(local, func(got uint64) bool {
		if got > n {
			t.Fatalf("local stream holds %d commands, want %d", got, n)
		}
		ci, err := cons.Info(ctx)
		require.NoError(t, err)
		return got == n && ci.NumAckPending == 0 && ci.NumPending == 0
	})
	t.Logf("all %d commands stored locally %v after the kill", n, time.Since(killed).Round(time.Millisecond))
	for i := range n {
		m, err := local.GetMsg(ctx, uint64(i+1))
		require.NoError(t, err)
		if string(m.Data) != strconv.Itoa(i) || m.Subject != "local.c"+strconv.Itoa(i%5) ||
			m.Header.Get(nats.MsgIdHdr) != "cmds.CMDS."+strconv.Itoa(i+1) {
			t.Fatalf("local seq %d: %s %q %v, want command %d", i+1, m.Subject, m.Data, m.Header, i)
		}
	}
	stopJS(t, p)
}
