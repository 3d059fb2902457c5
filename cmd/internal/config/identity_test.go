package config

import (
	"os"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// TestIdentityDerivesDownlinkDurables: a downlink without durable gets
// "<derived server name>_<name>", the same on every start.
func TestIdentityDerivesDownlinkDurables(t *testing.T) {
	dir := t.TempDir()
	src := "jetstream: {enabled: true}\nleafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n" +
		"downlinks: [{name: cmds, stream: CMDS, local_subject_prefix: cmd.}]\n"
	load := func() *Config {
		t.Helper()
		c := loopbackConfig(t, src, Env{StateDirectory: dir})
		require.NoError(t, c.Validate()) // no durable yet: the identity will give one
		id, err := c.ApplyIdentity(true)
		require.NoError(t, err)
		require.NoError(t, c.Validate())
		require.DeepEqual(t, c.ServerName, id.ServerName())
		require.DeepEqual(t, c.Downlinks[0].Durable, id.ServerName()+"_cmds")
		return c
	}
	first := load()
	require.DeepEqual(t, load().Downlinks[0].Durable, first.Downlinks[0].Durable)

	// Read only, as config check and print do: nothing is created.
	other := loopbackConfig(t, src, Env{StateDirectory: t.TempDir()})
	id, err := other.ApplyIdentity(false)
	require.NoError(t, err)
	if id != nil || other.ServerName != "" || other.Downlinks[0].Durable != "" {
		t.Fatalf("read-only ApplyIdentity on a new store: %v %q %q", id, other.ServerName, other.Downlinks[0].Durable)
	}
	if _, err := os.Stat(other.IdentityPath()); !os.IsNotExist(err) {
		t.Fatalf("read-only ApplyIdentity created %s: %v", other.IdentityPath(), err)
	}
}
