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

// TestIdentityDerivesMQTTClientID: an MQTT bridge without client_id gets
// "leafbox-<derived server name>-<name>" once the identity gives the
// server name; a configured client_id and server_name are kept.
func TestIdentityDerivesMQTTClientID(t *testing.T) {
	src := "bridges:\n  mqtt:\n    - {name: site, server: broker, outbound: [{from: a.>}]}\n" +
		"    - {name: plc, client_id: plc-bridge, server: broker, outbound: [{from: b.>}]}\n"
	c := loopbackConfig(t, src, Env{StateDirectory: t.TempDir()})
	require.DeepEqual(t, c.Bridges.MQTT[0].ClientID, "") // no server name yet
	require.DeepEqual(t, c.MQTTClientID(&c.Bridges.MQTT[0]), "leafbox-site")
	id, err := c.ApplyIdentity(true)
	require.NoError(t, err)
	require.NoError(t, c.Validate())
	require.DeepEqual(t, c.Bridges.MQTT[0].ClientID, "leafbox-"+id.ServerName()+"-site")
	require.DeepEqual(t, c.MQTTClientID(&c.Bridges.MQTT[0]), "leafbox-"+id.ServerName()+"-site")
	require.DeepEqual(t, c.Bridges.MQTT[1].ClientID, "plc-bridge")

	named := loopbackConfig(t, "server_name: gw1\n"+src, Env{StateDirectory: t.TempDir()})
	require.DeepEqual(t, named.Bridges.MQTT[0].ClientID, "leafbox-gw1-site")
	_, err = named.ApplyIdentity(true)
	require.NoError(t, err)
	require.DeepEqual(t, named.Bridges.MQTT[0].ClientID, "leafbox-gw1-site")
}
