package node

import (
	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/outbox"
)

// writeUplinkMetrics writes the leafbox_uplink_* families, one sample per
// uplink labelled uplink="<name>". It writes nothing without uplinks.
func writeUplinkMetrics(mw *monitor.MetricWriter, sts []UplinkStatus) {
	if len(sts) == 0 {
		return
	}
	family := perItemFamily(mw, sts, "uplink", func(st UplinkStatus) string { return st.Name })
	family("leafbox_uplink_captured_total", monitor.Counter, "Messages captured for the uplink.",
		func(st UplinkStatus) float64 { return float64(st.Captured) })
	family("leafbox_uplink_forwarded_total", monitor.Counter, "Publishes toward the hub, retries included.",
		func(st UplinkStatus) float64 { return float64(st.Forwarded) })
	family("leafbox_uplink_acked_total", monitor.Counter, "Messages the hub acknowledged.",
		func(st UplinkStatus) float64 { return float64(st.Acked) })
	mw.Family("leafbox_uplink_dropped_total", monitor.Counter, "Messages lost, by reason; rejected_by_hub counts those moved to the dead-letter store.")
	for _, st := range sts {
		for _, reason := range outbox.DropReasons {
			mw.Sample("leafbox_uplink_dropped_total", float64(st.Dropped[reason]), "uplink", st.Name, "reason", reason)
		}
	}
	family("leafbox_uplink_dead_letter_messages", monitor.Gauge, "Messages the hub refused for good, held in the dead-letter store.",
		func(st UplinkStatus) float64 { return float64(st.DeadLetterMsgs) })
	family("leafbox_uplink_hub_refusals_total", monitor.Counter, "Permanent refusals by the hub, each attempt.",
		func(st UplinkStatus) float64 { return float64(st.Refusals) })
	family("leafbox_uplink_hub_duplicates_unexpected_total", monitor.Counter, "Duplicate PubAcks for messages sent for the first time (id collisions).",
		func(st UplinkStatus) float64 { return float64(st.HubDuplicatesUnexpected) })
	family("leafbox_uplink_reordered_total", monitor.Counter, "Messages the hub stored after a message captured later (per-message forwarding across a stream leader loss).",
		func(st UplinkStatus) float64 { return float64(st.Reordered) })
	family("leafbox_uplink_backlog_messages", monitor.Gauge, "Messages waiting in the outbox.",
		func(st UplinkStatus) float64 { return float64(st.BacklogMsgs) })
	family("leafbox_uplink_backlog_bytes", monitor.Gauge, "Bytes waiting in the outbox.",
		func(st UplinkStatus) float64 { return float64(st.BacklogBytes) })
	family("leafbox_uplink_oldest_age_seconds", monitor.Gauge, "Age of the oldest message in the outbox; 0 when empty.",
		func(st UplinkStatus) float64 { return st.OldestAge.Seconds() })
	family("leafbox_uplink_connected", monitor.Gauge, "1 when the uplink's leafnode link is connected, else 0.",
		func(st UplinkStatus) float64 {
			if st.LinkState == leaf.StateConnected.String() {
				return 1
			}
			return 0
		})
	writeUplinkScheduleMetrics(mw, sts)
}

// perItemFamily returns a function that writes one metric family with a
// sample per item of items, labelled label="<its name>".
func perItemFamily[T any](mw *monitor.MetricWriter, items []T, label string, name func(T) string) func(family, typ, help string, value func(T) float64) {
	return func(family, typ, help string, value func(T) float64) {
		mw.Family(family, typ, help)
		for _, it := range items {
			mw.Sample(family, value(it), label, name(it))
		}
	}
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
	family("leafbox_uplink_acked_payload_bytes_total", monitor.Counter, "Payload bytes of the messages the hub acknowledged.",
		func(st UplinkStatus) float64 { return float64(st.AckedPayloadBytes) })
	family("leafbox_uplink_wire_bytes_total", monitor.Counter, "Bytes that crossed the uplink's link both ways, on the socket (after compression and TLS).",
		func(st UplinkStatus) float64 { return float64(st.WireBytes) })
	family("leafbox_uplink_wire_bytes_per_payload_byte", monitor.Gauge, "Wire bytes of the uplink's link per acknowledged payload byte of its uplinks: the metered cost of a payload byte.",
		func(st UplinkStatus) float64 { return st.WireBytesPerPayloadByte })
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

// writeDownlinkMetrics writes the leafbox_downlink_* families, one sample
// per downlink labelled downlink="<name>". It writes nothing without
// downlinks.
func writeDownlinkMetrics(mw *monitor.MetricWriter, sts []DownlinkStatus) {
	if len(sts) == 0 {
		return
	}
	family := perItemFamily(mw, sts, "downlink", func(st DownlinkStatus) string { return st.Name })
	family("leafbox_downlink_delivered_total", monitor.Counter, "Hub messages delivered locally.",
		func(st DownlinkStatus) float64 { return float64(st.Delivered) })
	family("leafbox_downlink_acked_total", monitor.Counter, "Acks the hub confirmed.",
		func(st DownlinkStatus) float64 { return float64(st.Acked) })
	family("leafbox_downlink_redelivered_total", monitor.Counter, "Hub messages received more than once.",
		func(st DownlinkStatus) float64 { return float64(st.Redelivered) })
	family("leafbox_downlink_failed_total", monitor.Counter, "Local deliveries that failed and were left to the hub to resend.",
		func(st DownlinkStatus) float64 { return float64(st.Failed) })
	family("leafbox_downlink_resends_total", monitor.Counter, "Times the hub was asked to resend at once after a link loss.",
		func(st DownlinkStatus) float64 { return float64(st.Resends) })
	family("leafbox_downlink_pending_messages", monitor.Gauge, "Hub messages after the last one received, as the hub reported.",
		func(st DownlinkStatus) float64 { return float64(st.Pending) })
}
