// Package outbox is leafbox's store-and-forward toward a nats-server hub:
// messages captured on local subjects are written to a local stream first
// and forwarded to a hub JetStream stream in order, each removed only
// after the hub acknowledged it with a PubAck.
//
// # Use
//
//	ob, err := outbox.New(stream, hub, outbox.Config{Name: "telemetry", ServerName: "gw-7", HubPrefix: "site1."})
//	// subscribe ob.InboxPrefix()+">" where the hub's replies arrive, calling ob.HandleReply
//	// subscribe each captured subject, calling ob.Capture in the handler
//	err = ob.Start(ctx)
//	st := ob.Status()
//	err = ob.Close() // then close the stream
//
// The package knows neither the broker nor the leaf link: the caller
// supplies the stream (store/filestore with SyncInterval 0, so Capture
// returns only after the message is durable) and a Hub, the path toward
// the hub. cmd/internal/app wires both.
//
// # Accepted means durable
//
// Capture stores the message synchronously. Called from an in-process
// subscription handler, it runs on the publisher's read goroutine, so the
// broker answers the publisher's next PING only after the message is on
// disk: from then on it survives kill -9.
//
// # Forwarding
//
// One goroutine forwards. It waits for Hub.WaitReady, then reads the
// stream from its first message in sequence order and publishes each
// message toward the hub as a JetStream publish request: the subject
// prefixed with HubPrefix, the header extended with
//
//	Nats-Msg-Id: <server name>.<uplink name>.<outbox sequence>
//	Nats-Expected-Stream: <stream>            (when Config.Stream is set)
//
// and the reply subject InboxPrefix()+<round>.<sequence>. Up to Window messages
// are in flight. A success PubAck ({"stream":..,"seq":..}) for the
// expected stream removes the message. An error PubAck, a PubAck for
// another stream, a publish the hub cannot receive, or a PubAck missing
// after AckTimeout ends the round: the forwarder forgets what was in
// flight, waits with exponential backoff and starts again from the
// stream's first message. Messages sent twice carry the same Nats-Msg-Id,
// so the hub stream's duplicate window stores them once. A PubAck that
// arrives late, from an earlier round, still removes its message: the hub
// has stored it.
//
// Order on the hub is the outbox's order as long as the hub stores what it
// receives in the order received; a retried round resends from the oldest
// message not yet acknowledged.
//
// # Limits and loss
//
// The stream's limits (MaxMsgs, MaxBytes, Discard) bound the backlog.
// Messages the stream evicts under DiscardOld are counted as dropped with
// reason "limits" (computed from the counts: stored since open, plus what
// was there at open, minus acknowledged, minus backlog, minus expired);
// messages expired by Config.MaxAge count as "max_age"; messages rejected
// under DiscardNew count as "rejected"; other store errors as
// "store_error". Nothing is dropped silently.
//
// # Time without a real-time clock
//
// A gateway without a battery-backed clock boots at 1970. Aging its
// backlog by the wall clock (a stream MaxAge) would wipe it the moment
// NTP sets the clock to today. So the stream gets no MaxAge; the outbox
// ages messages itself, with Config.Clock (core/clock). Capture stamps
// every message with three headers, which travel to the hub with the
// original subject and payload:
//
//	Leafbox-Boot-Id: <kernel boot id>
//	Leafbox-Mono: <nanoseconds since boot, CLOCK_BOOTTIME>
//	Leafbox-Time: <RFC 3339 UTC>              (only when the clock was trusted)
//
// (a publisher's own Leafbox-* stamp is kept). A message of the current
// boot is aged on the monotonic clock, whatever the wall clock did; one of
// an earlier boot by its Leafbox-Time once the clock is trusted; one of an
// earlier boot captured untrusted has no age of its own. Since messages
// are captured in sequence order, a message known to be older than MaxAge
// proves all earlier ones older: the outbox removes everything below the
// newest such message and nothing after it, so the backlog stays in
// sequence order. A hub consumer can date an untrusted message from a
// later trusted one of the same boot: time = Leafbox-Time − (its
// Leafbox-Mono − this Leafbox-Mono).
package outbox
