package node

import (
	"fmt"
	"maps"
	"net"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/outbox"
)

// The node implements these monitor interfaces itself; cmd/internal/app
// adds /leafz and /varz figures through Leafs and AddVarz.
var (
	_ monitor.UplinkProvider       = (*Node)(nil)
	_ monitor.DownlinkProvider     = (*Node)(nil)
	_ monitor.UplinkLimitsProvider = (*Node)(nil)
	_ monitor.DeadLetterProvider   = (*Node)(nil)
	_ monitor.LeafProvider         = (*Node)(nil)
)

// Uplinks implements monitor.UplinkProvider: one entry per running uplink.
func (n *Node) Uplinks() []monitor.UplinkInfo {
	sts := n.UplinkStatus()
	out := make([]monitor.UplinkInfo, len(sts))
	for i, st := range sts {
		out[i] = uplinkInfo(st)
	}
	return out
}

// uplinkInfo maps an uplink's status to its /uplinkz entry.
func uplinkInfo(st UplinkStatus) monitor.UplinkInfo {
	ui := monitor.UplinkInfo{
		Name:                    st.Name,
		State:                   string(st.State),
		LinkState:               st.LinkState,
		Captured:                st.Captured,
		Stored:                  st.Stored,
		Forwarded:               st.Forwarded,
		Acked:                   st.Acked,
		Retries:                 st.Retries,
		WrongStream:             st.WrongStream,
		InFlight:                st.InFlight,
		BacklogMsgs:             st.BacklogMsgs,
		BacklogBytes:            st.BacklogBytes,
		OldestAgeSeconds:        st.OldestAge.Seconds(),
		LastError:               st.LastError,
		AckedBytes:              st.AckedBytes,
		AckedPayloadBytes:       st.AckedPayloadBytes,
		WireBytes:               st.WireBytes,
		WireBytesPerPayloadByte: st.WireBytesPerPayloadByte,
		RateMsgs:                st.RateMsgs,
		RateBytes:               st.RateBytes,
		ETASeconds:              st.ETA.Seconds(),
		WatchdogRearms:          st.WatchdogRearms,
		StreamResets:            st.StreamResets,
		HubStream:               st.HubStream,
		HubSeq:                  st.HubSeq,
		Priority:                st.Priority,
		MaxRate:                 st.MaxRate,
		DailyBudget:             st.DailyBudget,
		BudgetUsed:              st.BudgetUsed,
		Waiting:                 st.Waiting,
	}
	if len(st.Dropped) > 0 {
		ui.Dropped = maps.Clone(st.Dropped)
	}
	if !st.LastErrorAt.IsZero() {
		at := st.LastErrorAt.UTC()
		ui.LastErrorAt = &at
	}
	ui.DeadLettered, ui.DeadLetterMsgs, ui.Requeued = st.DeadLettered, st.DeadLetterMsgs, st.Requeued
	ui.Refusals, ui.HubDuplicatesUnexpected = st.Refusals, st.HubDuplicatesUnexpected
	ui.Reordered = st.Reordered
	if !st.LastRejectionAt.IsZero() {
		at := st.LastRejectionAt.UTC()
		ui.LastRejection, ui.LastRejectionAt = st.LastRejection, &at
		ui.LastRejectionAgeSeconds = time.Since(st.LastRejectionAt).Seconds()
	}
	return ui
}

// UplinkLimits implements monitor.UplinkLimitsProvider: the scheduler's
// totals, or nil without uplinks.
func (n *Node) UplinkLimits() *monitor.UplinkLimits { return uplinkLimits(n.UplinkStatus()) }

// uplinkLimits returns the totals shared by the uplinks of sts, or nil.
func uplinkLimits(sts []UplinkStatus) *monitor.UplinkLimits {
	if len(sts) == 0 {
		return nil
	}
	l := sts[0].Limits
	return &monitor.UplinkLimits{Day: l.Day, MaxRate: l.MaxRate, DailyBudget: l.DailyBudget, BudgetUsed: l.Used, Exhausted: l.Exhausted}
}

// Downlinks implements monitor.DownlinkProvider: one entry per running
// downlink.
func (n *Node) Downlinks() []monitor.DownlinkInfo {
	sts := n.DownlinkStatus()
	if len(sts) == 0 {
		return nil
	}
	out := make([]monitor.DownlinkInfo, len(sts))
	for i, st := range sts {
		out[i] = downlinkInfo(st)
	}
	return out
}

// downlinkInfo maps a downlink's status to its /uplinkz entry.
func downlinkInfo(st DownlinkStatus) monitor.DownlinkInfo {
	di := monitor.DownlinkInfo{
		Name:        st.Name,
		State:       string(st.State),
		LinkState:   st.LinkState,
		Stream:      st.Stream,
		Durable:     st.Durable,
		Delivered:   st.Delivered,
		Acked:       st.Acked,
		Redelivered: st.Redelivered,
		Duplicates:  st.Duplicates,
		Failed:      st.Failed,
		Skipped:     st.Skipped,
		Resends:     st.Resends,
		Pending:     st.Pending,
		LastSeq:     st.LastSeq,
		LastError:   st.LastError,
	}
	if !st.LastErrorAt.IsZero() {
		at := st.LastErrorAt.UTC()
		di.LastErrorAt = &at
	}
	return di
}

// findUplinks returns the running uplink named name, or all for "".
func (n *Node) findUplinks(name string) ([]*uplink, error) {
	ups := n.runningUplinks()
	if name == "" {
		return ups, nil
	}
	for _, u := range ups {
		if u.name == name {
			return []*uplink{u}, nil
		}
	}
	return nil, fmt.Errorf("%w %q", monitor.ErrUnknownUplink, name)
}

// DeadLetters implements monitor.DeadLetterProvider.
func (n *Node) DeadLetters(uplink string, from uint64, limit int) ([]monitor.DeadLetterInfo, error) {
	ups, err := n.findUplinks(uplink)
	if err != nil {
		return nil, err
	}
	var out []monitor.DeadLetterInfo
	for _, u := range ups {
		list, err := u.ob.DeadLetters(from, limit-len(out))
		if err != nil {
			return out, fmt.Errorf("uplink %s: %w", u.name, err)
		}
		for _, d := range list {
			out = append(out, deadLetterInfo(u.name, d))
		}
		if len(out) >= limit {
			break
		}
	}
	return out, nil
}

// deadLetterInfo maps a dead letter to its monitoring entry.
func deadLetterInfo(uplink string, d outbox.DeadLetter) monitor.DeadLetterInfo {
	return monitor.DeadLetterInfo{Uplink: uplink, Seq: d.Seq, Subject: d.Subject, Size: d.Size, Reason: d.Reason,
		Error: d.Error, Time: d.Time, OutboxSeq: d.OutboxSeq, MsgID: d.MsgID, Refusals: d.Refusals}
}

// Requeue implements monitor.DeadLetterProvider.
func (n *Node) Requeue(uplink string, seqs []uint64, all bool) (int, error) {
	if uplink == "" {
		return 0, fmt.Errorf("%w: no uplink named", monitor.ErrUnknownUplink)
	}
	ups, err := n.findUplinks(uplink)
	if err != nil {
		return 0, err
	}
	if all {
		return ups[0].ob.RequeueAll()
	}
	return ups[0].ob.Requeue(seqs)
}

// Leafs implements monitor.LeafProvider: one entry per connected link,
// then one per leaf attached to the listener.
func (n *Node) Leafs(subs bool) []monitor.LeafInfo {
	var out []monitor.LeafInfo
	for i, r := range n.remotes {
		st := r.link.Status()
		if st.State != leaf.StateConnected {
			continue
		}
		li := leafInfo(i, st)
		if subs {
			li.Subs = r.local.subjects()
		}
		out = append(out, li)
	}
	if n.listener != nil {
		for _, st := range n.listener.Leafs() {
			out = append(out, acceptedLeafInfo(st, subs))
		}
	}
	return out
}

// leafInfo maps the status of the link of remote i to its /leafz entry. A
// link is no broker connection and has no connection id, so the entry's
// id is the remote's position in the remotes, counted from 1.
func leafInfo(i int, st leaf.Status) monitor.LeafInfo {
	li := monitor.LeafInfo{
		ID:          uint64(i + 1),
		Name:        st.ServerName,
		IsSpoke:     true,
		Account:     st.Account,
		InMsgs:      st.InMsgs,
		OutMsgs:     st.OutMsgs,
		InBytes:     st.InBytes,
		OutBytes:    st.OutBytes,
		NumSubs:     uint32(st.Subscriptions),
		Compression: st.Compression,
	}
	if st.RTT > 0 {
		li.RTT = st.RTT.String()
	}
	if host, port, err := net.SplitHostPort(st.RemoteAddr); err == nil {
		li.IP = host
		li.Port, _ = strconv.Atoi(port)
	}
	return li
}

// AddVarz replaces the broker's leaf figures in v with the node's: the
// connected links and attached leafs, their slow consumers, and the
// configured remotes. Without remotes and listener it leaves v alone.
func (n *Node) AddVarz(v *monitor.Varz) {
	if len(n.remotes) == 0 && n.listener == nil {
		return
	}
	v.Leafs = 0
	var slow uint64
	if n.listener != nil { // leafs attached to the listener
		v.Leafs = len(n.listener.Leafs())
		slow = n.listener.SlowConsumers()
	}
	if len(n.remotes) > 0 {
		v.LeafNode.Remotes = make([]monitor.RemoteLeafVarz, len(n.remotes))
	}
	for i, r := range n.remotes {
		v.LeafNode.Remotes[i] = r.varz
		st := r.link.Status()
		if st.State == leaf.StateConnected {
			v.Leafs++
		}
		slow += st.SlowConsumers
	}
	v.SlowConsumers += int64(slow)
	sc := monitor.SlowConsumersStats{}
	if v.SlowConsumersStats != nil {
		sc = *v.SlowConsumersStats
	}
	sc.Leafs = slow
	v.SlowConsumersStats = &sc
}

// Remote returns how /varz lists remote i.
func (n *Node) Remote(i int) monitor.RemoteLeafVarz { return n.remotes[i].varz }

// NumRemotes returns the number of remotes.
func (n *Node) NumRemotes() int { return len(n.remotes) }

// WriteMetrics writes the leafbox_uplink_*, leafbox_uplinks_* and
// leafbox_downlink_* families of the running uplinks and downlinks.
func (n *Node) WriteMetrics(mw *monitor.MetricWriter) {
	writeUplinkMetrics(mw, n.UplinkStatus())
	writeDownlinkMetrics(mw, n.DownlinkStatus())
}
