package node

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/downlink"
)

// TestLoopDenies: every remote denies exporting what the uplinks capture
// and what the downlinks deliver, and importing what the downlinks
// consume and deliver, after the operator's own lists, which /varz shows
// only when there are any.
func TestLoopDenies(t *testing.T) {
	cfg := Config{
		ServerID: "NID",
		Remotes: []RemoteConfig{
			{Link: leaf.Config{URLs: []string{"nats://hub1:7422"}, DenyImports: []string{"admin.>"}, DenyExports: []string{"local.>"}}},
			{Link: leaf.Config{URLs: []string{"nats://hub2:7422"}, Account: "SITE"}},
		},
		Uplinks: []UplinkConfig{{Remote: 0, Subjects: []string{"telemetry.>", "logs.*"}}},
		Downlinks: []DownlinkConfig{
			{Remote: 1, Config: downlink.Config{Name: "cmds", FilterSubjects: []string{"cmd.site1.>"}, HubPrefix: "cmd.site1.", LocalPrefix: "cmd."}},
			{Remote: 0, Config: downlink.Config{Name: "all", LocalPrefix: "ota."}},
		},
	}
	operator := cfg.Remotes[0].Link.DenyExports
	n, err := New(cfg, nil, nil)
	require.NoError(t, err)
	require.DeepEqual(t, operator, []string{"local.>"}) // the caller's slices are not appended to

	first := n.LinkConfig(0)
	require.DeepEqual(t, first.ServerID, "NID")
	require.DeepEqual(t, first.DenyImports, []string{"admin.>", "cmd.site1.>", "cmd.>", "ota.>"})
	require.DeepEqual(t, first.DenyExports, []string{"local.>", "telemetry.>", "logs.*", "cmd.>", "ota.>"})
	second := n.LinkConfig(1)
	require.DeepEqual(t, second.DenyImports, []string{"cmd.site1.>", "cmd.>", "ota.>"})
	require.DeepEqual(t, second.DenyExports, []string{"telemetry.>", "logs.*", "cmd.>", "ota.>"})

	require.DeepEqual(t, n.NumRemotes(), 2)
	if v := n.Remote(0); v.Deny == nil || len(v.Deny.Exports) != 5 || v.LocalAccount != "$G" {
		t.Fatalf("remote 0 in /varz: %+v", v)
	}
	if v := n.Remote(1); v.Deny != nil || v.LocalAccount != "SITE" {
		t.Fatalf("remote 1 in /varz: %+v", v)
	}
	require.DeepEqual(t, (&DownlinkConfig{Config: downlink.Config{LocalPrefix: "x."}}).LocalSubjects(), []string{"x.>"})
	// A filter outside the hub prefix keeps its subject.
	require.DeepEqual(t, downlink.LocalSubjects([]string{"cmd.site1.a", "other.b", "cmd.site1."}, "cmd.site1.", "c."), []string{"c.a", "c.other.b", "c.cmd.site1."})
}
