package app

import (
	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf/outbox"
	"github.com/leafbox/leafbox/store/vfs"
)

// openScheduler opens the scheduler shared by the uplinks, with its daily
// usage in <store dir>/state/scheduler.state.json.
func openScheduler(c *config.Config) (*outbox.Scheduler, error) {
	if err := vfs.OS.MkdirAll(c.Layout().State(), vfs.PermDir); err != nil {
		return nil, err
	}
	sc := outbox.SchedulerConfig{StateFile: c.Layout().SchedulerFile()}
	if l := c.UplinkLimits; l != nil {
		sc.MaxRate, sc.DailyBudget = int64(l.MaxRate), int64(l.DailyBudget)
	}
	return outbox.OpenScheduler(sc)
}

// writeUplinkScheduleMetrics writes the drain-rate, watchdog, stream-reset
// and budget families, one sample per uplink labelled uplink="<name>".
func writeUplinkScheduleMetrics(mw *monitor.MetricWriter, sts []UplinkStatus) {
	family := func(name, typ, help string, value func(UplinkStatus) float64) {
		mw.Family(name, typ, help)
		for _, st := range sts {
			mw.Sample(name, value(st), "uplink", st.Name)
		}
	}
	if len(sts) > 0 {
		writeUplinkLimitMetrics(mw, sts[0].Limits)
	}
	family("leafbox_uplink_acked_bytes_total", monitor.Counter, "Bytes of the messages the hub acknowledged.",
		func(st UplinkStatus) float64 { return float64(st.AckedBytes) })
	family("leafbox_uplink_rate_messages", monitor.Gauge, "Drain rate: acknowledged messages per second, moving average.",
		func(st UplinkStatus) float64 { return st.RateMsgs })
	family("leafbox_uplink_rate_bytes", monitor.Gauge, "Drain rate: acknowledged bytes per second, moving average.",
		func(st UplinkStatus) float64 { return st.RateBytes })
	family("leafbox_uplink_eta_seconds", monitor.Gauge, "Estimated time to drain the backlog at the drain rate; 0 when empty or stalled.",
		func(st UplinkStatus) float64 { return st.ETA.Seconds() })
	family("leafbox_uplink_watchdog_rearms_total", monitor.Counter, "Rounds the stuck-backlog watchdog restarted.",
		func(st UplinkStatus) float64 { return float64(st.WatchdogRearms) })
	family("leafbox_uplink_stream_resets_total", monitor.Counter, "Recreations of the hub stream detected from PubAck sequences.",
		func(st UplinkStatus) float64 { return float64(st.StreamResets) })
	family("leafbox_uplink_budget_used_bytes", monitor.Gauge, "Bytes the uplink published today (UTC), counted against daily_budget.",
		func(st UplinkStatus) float64 { return float64(st.BudgetUsed) })
	family("leafbox_uplink_budget_exhausted", monitor.Gauge, "1 while the uplink waits for a daily budget, else 0.",
		func(st UplinkStatus) float64 {
			if st.Waiting == outbox.WaitBudget {
				return 1
			}
			return 0
		})
}

var _ monitor.UplinkLimitsProvider = appMonitor{}

// UplinkLimits implements monitor.UplinkLimitsProvider: the scheduler's
// totals, or nil without uplinks.
func (m appMonitor) UplinkLimits() *monitor.UplinkLimits {
	if m.uplinkStatus == nil {
		return nil
	}
	sts := m.uplinkStatus()
	if len(sts) == 0 {
		return nil
	}
	l := sts[0].Limits
	return &monitor.UplinkLimits{Day: l.Day, MaxRate: l.MaxRate, DailyBudget: l.DailyBudget, BudgetUsed: l.Used, Exhausted: l.Exhausted}
}

// writeUplinkLimitMetrics writes the totals shared by all uplinks.
func writeUplinkLimitMetrics(mw *monitor.MetricWriter, l outbox.SchedulerStatus) {
	mw.Family("leafbox_uplinks_budget_used_bytes", monitor.Gauge, "Bytes all uplinks published today (UTC), counted against uplink_limits.daily_budget.")
	mw.Sample("leafbox_uplinks_budget_used_bytes", float64(l.Used))
	exhausted := 0.0
	if l.Exhausted {
		exhausted = 1
	}
	mw.Family("leafbox_uplinks_budget_exhausted", monitor.Gauge, "1 while uplink_limits.daily_budget is used up (only the highest priority flows), else 0.")
	mw.Sample("leafbox_uplinks_budget_exhausted", exhausted)
}
