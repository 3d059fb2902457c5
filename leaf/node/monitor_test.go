package node

import (
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/outbox"
)

// TestUplinkMetrics checks the leafbox_uplink_* families written from the
// uplinks' status.
func TestUplinkMetrics(t *testing.T) {
	st := UplinkStatus{LinkState: "connected"}
	st.Name, st.Captured, st.Forwarded, st.Acked = "tel", 10, 7, 6
	st.Dropped = map[string]uint64{outbox.DropLimits: 2, outbox.DropDiskLow: 3}
	st.BacklogMsgs, st.BacklogBytes, st.OldestAge = 2, 300, 1500*time.Millisecond
	var b strings.Builder
	writeUplinkMetrics(monitor.NewMetricWriter(&b), []UplinkStatus{st, {Status: outbox.Status{Name: "logs"}, LinkState: "connecting"}})
	for _, want := range []string{
		"# TYPE leafbox_uplink_captured_total counter\n",
		`leafbox_uplink_captured_total{uplink="tel"} 10` + "\n",
		`leafbox_uplink_forwarded_total{uplink="tel"} 7` + "\n",
		`leafbox_uplink_acked_total{uplink="tel"} 6` + "\n",
		`leafbox_uplink_dropped_total{uplink="tel",reason="limits"} 2` + "\n",
		`leafbox_uplink_dropped_total{uplink="logs",reason="rejected"} 0` + "\n",
		`leafbox_uplink_dropped_total{uplink="tel",reason="disk_low"} 3` + "\n",
		`leafbox_uplink_dropped_total{uplink="logs",reason="store_full"} 0` + "\n",
		"# TYPE leafbox_uplink_backlog_messages gauge\n",
		`leafbox_uplink_backlog_messages{uplink="tel"} 2` + "\n",
		`leafbox_uplink_backlog_bytes{uplink="tel"} 300` + "\n",
		`leafbox_uplink_oldest_age_seconds{uplink="tel"} 1.5` + "\n",
		`leafbox_uplink_connected{uplink="tel"} 1` + "\n",
		`leafbox_uplink_connected{uplink="logs"} 0` + "\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}

	u := uplinkInfo(st)
	if u.Name != "tel" || u.LinkState != "connected" || u.Dropped["limits"] != 2 || u.OldestAgeSeconds != 1.5 || u.LastErrorAt != nil {
		t.Fatalf("uplinkInfo: %+v", u)
	}
	b.Reset()
	writeUplinkMetrics(monitor.NewMetricWriter(&b), nil)
	require.DeepEqual(t, b.String(), "")
}

// TestUplinkScheduleMetrics checks the drain-rate, watchdog, reset and
// budget families and their /uplinkz fields.
func TestUplinkScheduleMetrics(t *testing.T) {
	st := UplinkStatus{LinkState: "connected"}
	st.Name, st.AckedBytes, st.RateMsgs, st.RateBytes, st.ETA = "bulk", 4096, 12.5, 2048, 90*time.Second
	st.WatchdogRearms, st.StreamResets, st.BudgetUsed, st.Waiting, st.Priority = 1, 2, 777, outbox.WaitBudget, 3
	st.Limits = outbox.SchedulerStatus{Day: "2026-01-02", Used: 5000, DailyBudget: 5000, Exhausted: true}
	var b strings.Builder
	writeUplinkMetrics(monitor.NewMetricWriter(&b), []UplinkStatus{st})
	for _, want := range []string{
		`leafbox_uplink_acked_bytes_total{uplink="bulk"} 4096` + "\n",
		`leafbox_uplink_rate_messages{uplink="bulk"} 12.5` + "\n",
		`leafbox_uplink_rate_bytes{uplink="bulk"} 2048` + "\n",
		`leafbox_uplink_eta_seconds{uplink="bulk"} 90` + "\n",
		`leafbox_uplink_watchdog_rearms_total{uplink="bulk"} 1` + "\n",
		`leafbox_uplink_stream_resets_total{uplink="bulk"} 2` + "\n",
		`leafbox_uplink_budget_used_bytes{uplink="bulk"} 777` + "\n",
		`leafbox_uplink_budget_exhausted{uplink="bulk"} 1` + "\n",
		"leafbox_uplinks_budget_used_bytes 5000\n",
		"leafbox_uplinks_budget_exhausted 1\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
	u := uplinkInfo(st)
	if l := uplinkLimits([]UplinkStatus{st}); l == nil || l.BudgetUsed != 5000 || !l.Exhausted || l.Day != "2026-01-02" {
		t.Fatalf("UplinkLimits: %+v", l)
	}
	if u.ETASeconds != 90 || u.RateBytes != 2048 || u.StreamResets != 2 || u.Waiting != "budget" || u.Priority != 3 || u.BudgetUsed != 777 {
		t.Fatalf("uplinkInfo: %+v", u)
	}
}

func TestLeafInfoFromStatus(t *testing.T) {
	st := leaf.Status{
		State: leaf.StateConnected, RemoteAddr: "[::1]:7422", ServerName: "hub-1", Account: "SITE",
		RTT: 1500 * time.Microsecond, InMsgs: 1, InBytes: 2, OutMsgs: 3, OutBytes: 4, Subscriptions: 5,
		Compression: leaf.CompressionS2Fast,
	}
	require.DeepEqual(t, leafInfo(2, st), monitor.LeafInfo{
		ID: 3, Name: "hub-1", IsSpoke: true, Account: "SITE", IP: "::1", Port: 7422, RTT: "1.5ms",
		InMsgs: 1, InBytes: 2, OutMsgs: 3, OutBytes: 4, NumSubs: 5, Compression: "s2_fast",
	})
	require.DeepEqual(t, leafInfo(0, leaf.Status{State: leaf.StateConnected}).RTT, "") // not measured yet
}
