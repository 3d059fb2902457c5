package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/storedir"
)

func TestValidateUplinks(t *testing.T) {
	const remote = "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"
	c := mustValidate(t, remote+"uplinks: [{name: tel, subjects: [telemetry.>], hub_subject_prefix: site1., max_msgs: 10, discard: new}]\n")
	require.DeepEqual(t, c.OutboxDir(&c.Uplinks[0]), "/home/test/.local/state/leafbox/outbox/tel")

	_, err := Parse([]byte("uplinks:\n  - name: a\n    subjects: [x.>]\n    bogus: 1\n"))
	require.ErrorContains(t, err, `line 4: uplinks[0].bogus: unknown key "bogus"`)
	err = validateErr(t, "uplinks:\n  - name: a.b\n    subjects: [x.>]\n    hub_subject_prefix: ''\n    discard: sometimes\n")
	require.ErrorContains(t, err, "need a leafnodes remote", "line 2: uplinks[0].name", "hub_subject_prefix", "discard")
	err = validateErr(t, remote+"uplinks: [{name: a, subjects: ['>'], hub_subject_prefix: s.}]\n")
	require.ErrorContains(t, err, `hub subject "s.>" overlaps captured subject ">"`)
}

func TestValidateUplinkRemote(t *testing.T) {
	const remotes = "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1', name: cloud}, {url: 'nats://127.0.0.1:2', name: plant}]}\n"
	c := mustValidate(t, remotes+
		"uplinks: [{name: a, subjects: [a.>], hub_subject_prefix: s., remote: plant}, {name: b, subjects: [b.>], hub_subject_prefix: s.}]\n"+
		"downlinks: [{name: d, stream: CMD, remote: plant, durable: gw1_d, local_subject_prefix: cmd.}]\n")
	require.DeepEqual(t, c.RemoteIndex(c.Uplinks[0].Remote), 1)
	require.DeepEqual(t, c.RemoteIndex(c.Uplinks[1].Remote), 0)
	require.DeepEqual(t, c.RemoteIndex(c.Downlinks[0].Remote), 1)

	err := validateErr(t, remotes+"uplinks: [{name: a, subjects: [a.>], hub_subject_prefix: s., remote: nowhere}]\n"+
		"downlinks: [{name: d, stream: CMD, remote: elsewhere}]\n")
	require.ErrorContains(t, err, `uplinks[0].remote: no leafnodes remote is named "nowhere"`,
		`downlinks[0].remote: no leafnodes remote is named "elsewhere"`)
	err = validateErr(t, "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1', name: x}, {url: 'nats://127.0.0.1:2', name: x}]}\n")
	require.ErrorContains(t, err, `leafnodes.remotes[1].name: "x" is used twice`)
}

func TestValidateUplinkSchedule(t *testing.T) {
	const remote = "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"
	c := mustValidate(t, remote+"uplink_limits: {max_rate: 1MB, daily_budget: 2G}\n"+
		"uplinks: [{name: a, subjects: [x.>], hub_subject_prefix: s., priority: 7, max_rate: 64KiB, daily_budget: 100MB}]\n")
	u := c.Uplinks[0]
	if u.Priority != 7 || u.MaxRate != 64<<10 || u.DailyBudget != 100<<20 || u.DrainJitter == nil ||
		time.Duration(*u.DrainJitter) != DefaultDrainJitter || c.UplinkLimits.MaxRate != 1<<20 || c.UplinkLimits.DailyBudget != 2e9 {
		t.Fatalf("uplink %+v limits %+v", u, c.UplinkLimits)
	}
	c = mustValidate(t, remote+"uplinks: [{name: a, subjects: [x.>], hub_subject_prefix: s., drain_jitter: 0s}]\n")
	require.DeepEqual(t, *c.Uplinks[0].DrainJitter, 0)
	err := validateErr(t, remote+"uplink_limits: {max_rate: -1}\n"+
		"uplinks: [{name: a, subjects: [x.>], hub_subject_prefix: s., priority: 1001, max_rate: -5, daily_budget: -1, drain_jitter: -1s}]\n")
	require.ErrorContains(t, err, "uplinks[0].priority: 1001 is out of range", "uplinks[0].max_rate: must not be negative",
		"uplinks[0].daily_budget: must not be negative", "uplinks[0].drain_jitter: must not be negative",
		"uplink_limits.max_rate: must not be negative")
	err = validateErr(t, "uplink_limits: {daily_budget: 1MB}\n")
	require.ErrorContains(t, err, "uplink_limits: has no effect without uplinks")
}

func TestValidateUplinkHubDomain(t *testing.T) {
	const remote = "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"
	mustValidate(t, remote+"uplinks: [{name: tel, subjects: [t.>], hub_subject_prefix: s., stream: S, hub_domain: hub}]\n")
	err := validateErr(t, remote+"uplinks: [{name: tel, subjects: [t.>], hub_subject_prefix: s., hub_domain: hub}]\n")
	require.ErrorContains(t, err, "uplinks[0].hub_domain: needs stream")
	err = validateErr(t, remote+"uplinks: [{name: tel, subjects: [t.>], hub_subject_prefix: s., stream: S, hub_domain: a.b}]\n")
	require.ErrorContains(t, err, `uplinks[0].hub_domain: "a.b" is not a JetStream domain`)
	err = validateErr(t, remote+"jetstream: {domain: hub}\nuplinks: [{name: tel, subjects: [t.>], hub_subject_prefix: s., stream: S, hub_domain: hub}]\n")
	require.ErrorContains(t, err, `"hub" is this gateway's own jetstream.domain`)
}

func TestValidateDeadLetterAfter(t *testing.T) {
	const remote = "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\njetstream: {store_dir: /tmp/x}\n"
	c := mustValidate(t, remote+"uplinks: [{name: tel, subjects: [t.>], hub_subject_prefix: s., dead_letter_after: 5}]\n")
	require.DeepEqual(t, c.Uplinks[0].DeadLetterAfter, 5)
	require.DeepEqual(t, c.DeadLetterDir(&c.Uplinks[0]), "/tmp/x/deadletter/tel")
	err := validateErr(t, remote+"uplinks: [{name: tel, subjects: [t.>], hub_subject_prefix: s., dead_letter_after: -1}]\n")
	require.ErrorContains(t, err, "uplinks[0].dead_letter_after: must not be negative")
}

// TestValidateUplinkNameFitsItsStateFile: an uplink's name becomes part
// of its state file's name, which must fit the 255 bytes of a file name.
func TestValidateUplinkNameFitsItsStateFile(t *testing.T) {
	const remote = "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"
	uplink := func(name string) string {
		return remote + "uplinks: [{name: " + name + ", subjects: [t.>], hub_subject_prefix: s.}]\n"
	}
	c := mustValidate(t, uplink(strings.Repeat("u", storedir.MaxUplinkNameLen)))
	require.DeepEqual(t, len(filepath.Base(c.OutboxStateFile(&c.Uplinks[0]))+".tmp"), 255)
	err := validateErr(t, uplink(strings.Repeat("u", storedir.MaxUplinkNameLen+1)))
	require.ErrorContains(t, err, "uplinks[0].name", "is too long: at most 233 bytes")
}
