// Package monitor serves leafbox's HTTP monitoring endpoints with
// nats-server's paths, query parameters and JSON documents, so that the
// nats CLI, Surveyor and Prometheus exporters work unchanged. It imports no
// subsystem: the server feeds it through the Provider interface, which the
// monitor declares. (It uses core/subject, a pure leaf package, to match
// /subsz?test= subjects.)
//
// # Division of labour
//
// The provider supplies raw snapshots; the monitor owns everything about
// their presentation:
//
//   - /varz: the provider fills a Varz with identity, configuration and
//     counters. The monitor sets now, uptime and http_req_stats (it counts
//     the requests itself), fills go, cores, gomaxprocs, gomemlimit, mem
//     and cpu when left zero, and http_host/http_port from the listener
//     when both are left zero.
//   - /connz: the provider returns every connection in the requested state
//     as ConnSnapshot values; the monitor filters (cid, user, acc), sorts,
//     pages, formats uptime, idle and rtt, and hides authorized_user and
//     account unless auth=true.
//   - /subsz: the provider returns an account's (or all) subscriptions and
//     the sublist statistics; the monitor filters by test subject, sorts
//     (account, cid, sid) and pages.
//   - /accountz: built from Accounts, SublistStats and Connections.
//   - /healthz: the monitor checks the query, then Provider.Ready, then the
//     optional HealthChecker (JetStream), and shapes the answer.
//   - /jsz and /leafz: answered by the optional JetStreamProvider and
//     LeafProvider; without them /jsz reports "disabled": true and /leafz
//     no leafnodes. /routez and /gatewayz are always empty but valid.
//   - /uplinkz (a leafbox extension): the store-and-forward uplinks from
//     the optional UplinkProvider; without it the list is empty.
//   - /bridgez (a leafbox extension): the bridges from the optional
//     BridgeProvider (the document's shape is on Bridgez); without it the
//     list is empty.
//   - /metrics: Prometheus text derived from /varz, the bridges'
//     leafbox_bridge_* families, plus whatever an optional MetricsSource
//     appends.
//   - clock (a leafbox extension): with the optional ClockProvider,
//     /healthz, /varz and /uplinkz carry a "clock" object saying whether
//     the wall clock is trusted. An untrusted clock never fails /healthz.
//
// # Metrics
//
// /metrics uses the Prometheus text format 0.0.4 and these families, all
// derived from the completed Varz: leafbox_info{server_id,server_name,
// version,go} (always 1), the gauges leafbox_connections, leafbox_leafnodes,
// leafbox_subscriptions, leafbox_uptime_seconds, leafbox_start_time_seconds,
// leafbox_mem_bytes and leafbox_cpu_percent, and the counters
// leafbox_connections_accepted_total (varz total_connections),
// leafbox_in_msgs_total, leafbox_out_msgs_total, leafbox_in_bytes_total,
// leafbox_out_bytes_total, leafbox_slow_consumers_total,
// leafbox_stale_connections_total and leafbox_http_requests_total{path}.
// With a BridgeProvider listing bridges, per bridge labelled kind and name:
// the gauge leafbox_bridge_connected (1 or 0), the counters
// leafbox_bridge_in_msgs_total, leafbox_bridge_out_msgs_total,
// leafbox_bridge_bad_frames_total, leafbox_bridge_reconnects_total and
// leafbox_bridge_dropped_total{reason}, and the gauge
// leafbox_bridge_last_error_timestamp_seconds (0 without an error).
//
// # Contract
//
// Provider methods may be called concurrently from any number of requests
// and must not block on network I/O. The monitor never modifies what they
// return (it completes shallow copies of Varz and Jsz), so a provider may
// share immutable data between calls, such as the stored snapshots of
// closed connections; it must not modify anything after returning it. The
// handler holds no lock while calling the provider; its only state is
// atomic request counters and a mutex-guarded CPU sample.
//
// # Compatibility notes
//
// JSON field names and omission rules are nats-server v2.15's. Durations
// typed time.Duration (ping_interval, write_deadline, ...) are integer
// nanoseconds; auth_timeout and tls_timeout are float seconds; uptime and
// idle read like "1y2d3h4m5s". Query booleans accept what strconv.ParseBool
// accepts ("1", "true", ...). A bad parameter is answered with 400 and a
// plain-text message in nats-server's wording, for example
// "Error decoding boolean for 'subs': ..." or "invalid sorting option: x".
// /connz sorts by cid, start, uptime and reason ascending and by every other
// key descending, breaking ties by ascending cid; its total counts the
// connections that passed every filter (nats-server counts before the user
// and cid filters). Lists inside a connection and /subsz pages are sorted so
// that paging is stable. An optional callback parameter (a dotted
// JavaScript identifier) wraps any JSON response for JSONP.
package monitor
