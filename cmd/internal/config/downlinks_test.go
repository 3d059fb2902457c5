package config

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

func TestValidateDownlinks(t *testing.T) {
	const remote = "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"
	c := mustValidate(t, "server_name: gw.1\n"+remote+
		"downlinks: [{name: cmds, stream: CMDS, filter_subjects: [cmd.site1.>], hub_subject_prefix: cmd.site1., local_subject_prefix: cmd.}]\n")
	require.DeepEqual(t, c.Downlinks[0].HubDomain, "hub")
	require.DeepEqual(t, c.Downlinks[0].Durable, "gw_1_cmds")

	_, err := Parse([]byte("downlinks:\n  - name: a\n    stream: S\n    bogus: 1\n"))
	require.ErrorContains(t, err, `line 4: downlinks[0].bogus: unknown key "bogus"`)
	err = validateErr(t, "downlinks:\n  - name: a.b\n    stream: ''\n    filter_subjects: ['a..b']\n"+
		"    hub_subject_prefix: x\n    local_subject_prefix: '>.'\n    expires: 10ms\n    max_ack_pending: -1\n")
	require.ErrorContains(t, err, "need a leafnodes remote", "line 2: downlinks[0].name", "downlinks[0].stream",
		`invalid subject "a..b"`, "hub_subject_prefix",
		"local_subject_prefix", "expires: must be at least 1s", "max_ack_pending")
	// With nowhere to keep an identity, nothing names the hub's consumer.
	err = validateErr(t, "jetstream: {enabled: false}\n"+remote+"downlinks: [{name: a, stream: S}]\n")
	require.ErrorContains(t, err, "downlinks[0].durable: is required without server_name or a store directory")
	err = validateErr(t, "server_name: gw\njetstream: {enabled: true, domain: hub}\n"+remote+
		"downlinks: [{name: a, stream: S}, {name: a, stream: S}]\n")
	require.ErrorContains(t, err, "own JetStream domain", `"a" is used twice`, `"gw_a" on stream "S" is used twice`,
		"would deliver on every local subject")
	err = validateErr(t, "server_name: gw\n"+remote+"uplinks: [{name: up, subjects: [cmd.>], hub_subject_prefix: s.}]\n"+
		"downlinks: [{name: a, stream: S, local_subject_prefix: cmd.}]\n")
	require.ErrorContains(t, err, `downlinks[0]: local subject "cmd.>" overlaps subject "cmd.>" that uplink "up" captures`)
}
