//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// startJSHub starts a real nats-server hub with opts plus JetStream in
// domain "hub", and creates the stream cfg on it. It returns the hub, a
// JetStream context on a client connection of the hub (closed in
// t.Cleanup) and the stream.
func startJSHub(t *testing.T, ctx context.Context, opts leaftest.HubOptions, cfg jetstream.StreamConfig) (*leaftest.Hub, jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	opts.Config = fmt.Sprintf("jetstream { store_dir: %q, domain: hub }\n", t.TempDir()) + opts.Config
	hub := leaftest.StartHub(t, opts)
	hjs, err := jetstream.New(natsConnect(t, hub.ClientURL()))
	require.NoError(t, err)
	stream, err := hjs.CreateStream(ctx, cfg)
	require.NoError(t, err)
	return hub, hjs, stream
}

// streamMsgs returns how many messages stream holds.
func streamMsgs(t *testing.T, ctx context.Context, stream jetstream.Stream) uint64 {
	t.Helper()
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	return info.State.Msgs
}

// awaitHubMsgs waits until the hub stream holds want messages, failing
// if it ever holds more; on a timeout it shows the gateway p's /uplinkz
// (at its monitoring URL mon) and log.
func awaitHubMsgs(t *testing.T, ctx context.Context, stream jetstream.Stream, want uint64, p *proc, mon string) {
	t.Helper()
	deadline := time.After(waitTimeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for got := streamMsgs(t, ctx, stream); got != want; got = streamMsgs(t, ctx, stream) {
		if got > want {
			t.Fatalf("hub stream holds %d messages, want %d", got, want)
		}
		select {
		case <-deadline:
			t.Fatalf("hub stream holds %d messages after %v, want %d; /uplinkz %+v; log:\n%s",
				got, waitTimeout, want, getUplinkz(t, mon), p.log())
		case <-tick.C:
		}
	}
}

// writeUplinkConfig writes, in dir, the config of a gateway gw1 whose
// JetStream state is in dir/state and whose uplink "tel" forwards
// telemetry.> through a leafnode remote at leafURL to the hub stream SITE
// as site1.telemetry.>, and returns its path.
func writeUplinkConfig(t *testing.T, dir, leafURL string) string {
	t.Helper()
	return writeUplinkConfigNamed(t, dir, leafURL, "server_name: gw1\n")
}

// writeUplinkConfigNamed is writeUplinkConfig with the server_name line
// given ("" leaves the name to the gateway's identity).
func writeUplinkConfigNamed(t *testing.T, dir, leafURL, serverName string) string {
	t.Helper()
	cfg := filepath.Join(dir, "leafbox.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, serverName+`listen: 127.0.0.1
port: -1
http_port: -1
jetstream:
  store_dir: %q
leafnodes:
  remotes:
    - url: %q
uplinks:
  - name: tel
    subjects: [telemetry.>]
    hub_subject_prefix: site1.
    stream: SITE
`, filepath.Join(dir, "state"), leafURL), 0o600))
	return cfg
}
