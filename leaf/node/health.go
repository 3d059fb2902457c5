package node

import (
	"fmt"
	"time"

	"github.com/leafbox/leafbox/leaf"
)

// HealthThresholds are the limits past which an uplink or downlink is in
// trouble. The problems' texts name them as the gateway's healthz
// settings (healthz.link_down, healthz.backlog_age).
type HealthThresholds struct {
	// LinkDown is how long the link of an uplink or downlink may stay out
	// of the connected state.
	LinkDown time.Duration
	// BacklogAge is how old an uplink's oldest waiting message may be.
	BacklogAge time.Duration
}

// Problem is an uplink or a downlink in trouble: exactly one of Uplink
// and Downlink names it, and Error says what is wrong, for an operator.
type Problem struct {
	Uplink, Downlink string
	Error            string
}

// Problems lists the uplinks, then the downlinks, in trouble at now as th
// measures it: a link down for longer than th.LinkDown, a backlog whose
// oldest message is older than th.BacklogAge, messages held as dead
// letters. Nil when all is well.
func (n *Node) Problems(th HealthThresholds, now time.Time) []Problem {
	return problems(th, now, n.UplinkStatus(), n.DownlinkStatus())
}

// problems is Problems over the given statuses.
func problems(th HealthThresholds, now time.Time, ups []UplinkStatus, downs []DownlinkStatus) []Problem {
	var out []Problem
	linkDown := func(state string, since time.Time) (time.Duration, bool) {
		if state == leaf.StateConnected.String() || since.IsZero() {
			return 0, false
		}
		d := now.Sub(since)
		return d.Round(time.Second), d > th.LinkDown
	}
	for _, st := range ups {
		if d, bad := linkDown(st.LinkState, st.LinkSince); bad {
			out = append(out, Problem{Uplink: st.Name,
				Error: fmt.Sprintf("uplink %s: link %s for %v (healthz.link_down %v)", st.Name, st.LinkState, d, th.LinkDown)})
		}
		if st.BacklogMsgs > 0 && st.OldestAge > th.BacklogAge {
			out = append(out, Problem{Uplink: st.Name,
				Error: fmt.Sprintf("uplink %s: oldest of %d waiting messages is %v old (healthz.backlog_age %v)",
					st.Name, st.BacklogMsgs, st.OldestAge.Round(time.Second), th.BacklogAge)})
		}
		// A dead letter counts while the dead-letter stream holds it: a
		// requeued message no longer does.
		if n := st.DeadLetterMsgs; n > 0 {
			out = append(out, Problem{Uplink: st.Name,
				Error: fmt.Sprintf("uplink %s: %d messages dead-lettered (the hub refused them; leafbox uplink deadletters %s)", st.Name, n, st.Name)})
		}
	}
	for _, st := range downs {
		if d, bad := linkDown(st.LinkState, st.LinkSince); bad {
			out = append(out, Problem{Downlink: st.Name,
				Error: fmt.Sprintf("downlink %s: link %s for %v (healthz.link_down %v)", st.Name, st.LinkState, d, th.LinkDown)})
		}
	}
	return out
}
