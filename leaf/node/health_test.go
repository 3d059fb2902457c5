package node

import (
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
)

// TestDegraded: a link down past LinkDown (not a shorter blip, not a
// connected one), a backlog older than BacklogAge and dead letters still
// held are problems, uplinks first, then downlinks.
func TestDegraded(t *testing.T) {
	now := time.Unix(100000, 0)
	th := HealthThresholds{LinkDown: 15 * time.Minute, BacklogAge: time.Hour}
	connecting, connected := leaf.StateConnecting.String(), leaf.StateConnected.String()
	up := func(name, state string, down time.Duration) UplinkStatus {
		st := UplinkStatus{LinkState: state, LinkSince: now.Add(-down)}
		st.Name = name
		return st
	}
	old := up("old", connected, time.Hour)
	old.BacklogMsgs, old.OldestAge = 30000, 3*time.Hour
	young := up("young", connected, time.Hour)
	young.BacklogMsgs, young.OldestAge = 5, time.Minute
	dead := up("dead", connected, time.Hour)
	dead.DeadLetterMsgs = 2
	requeued := up("requeued", connected, time.Hour) // dead-lettered once, all requeued since
	requeued.DeadLettered, requeued.Requeued = 3, 3
	down := DownlinkStatus{LinkState: connecting, LinkSince: now.Add(-time.Hour)}
	down.Name = "cmds"
	got := problems(th, now, []UplinkStatus{
		up("down", connecting, 20*time.Minute),
		up("blip", connecting, 5*time.Minute),
		up("fine", connected, 20*time.Minute),
		old, young, dead, requeued,
	}, []DownlinkStatus{down})
	want := []Problem{
		{Uplink: "down", Error: "uplink down: link connecting for 20m0s (healthz.link_down 15m0s)"},
		{Uplink: "old", Error: "uplink old: oldest of 30000 waiting messages is 3h0m0s old (healthz.backlog_age 1h0m0s)"},
		{Uplink: "dead", Error: "uplink dead: 2 messages dead-lettered (the hub refused them; leafbox uplink deadletters dead)"},
		{Downlink: "cmds", Error: "downlink cmds: link connecting for 1h0m0s (healthz.link_down 15m0s)"},
	}
	require.DeepEqual(t, got, want)
}
