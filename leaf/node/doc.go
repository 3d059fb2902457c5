// Package node is the gateway's leaf runtime: the leafnode remotes and
// their links to hubs, the uplinks (store-and-forward outboxes toward hub
// streams), the downlinks (durable hub consumers delivering locally), the
// leaf listener, the clock's trust, and the loop prevention that ties
// them together.
//
// The node reaches the broker only through Broker and Conn, and the local
// JetStream engine only through Streams, interfaces it declares itself:
// it imports neither core/server nor store/jetstream (scripts/check-imports
// holds that). cmd/internal/app adapts *server.Server and passes
// *jetstream.Engine, and turns the configuration file into Config. Nor
// does it name a store engine: the outbox and dead-letter streams come
// from Config.OpenStream.
//
// # Contract
//
//   - Remotes: one leaf.Link per RemoteConfig, bound to the broker
//     through a leaf.Local over Broker. Every link's in-process
//     connections form one set; interest made through them (learned from
//     a hub) is never announced to a hub again.
//   - Loop prevention (loop.go): what an uplink captures is denied export
//     on every remote, so it reaches a hub only through the uplink; the
//     hub subjects a downlink consumes and the local subjects it delivers
//     on are denied import on every remote, and the local subjects are
//     denied export too.
//   - Uplinks: captured messages go into an outbox (a stream from
//     Config.OpenStream, synced on an interval) on the
//     publisher's read goroutine; Broker.OnPing makes them durable before
//     the broker answers the publisher's PING, so a publisher's PONG (its
//     flush) means its captured messages are on disk. The outbox forwards
//     them over its remote's link only, with the link's refusals mapped
//     to the outbox's (too large, not permitted: permanent).
//   - Downlinks: a hub message is delivered when a local stream that
//     captures its subject (Streams.CapturingStream) returned a PubAck
//     within 5s — published with Nats-Msg-Id "<downlink>.<stream>.<seq>"
//     unless it has one, and without the hub publisher's
//     Nats-Expected-* headers — or, with no such stream, when a
//     subscription other than a link's matched and received it. Only
//     then is it acked to the hub; otherwise the hub sends it again.
//   - Clock: Start runs the clock's refresh loop; an uplink with a hub
//     domain asks the hub's time (a stream info's "ts") whenever its link
//     is ready, which can make an unsynced clock trusted.
//   - Health (health.go): Problems judges the uplinks and downlinks
//     against thresholds at a given time (a link down too long, a backlog
//     too old, dead letters held); the gateway serves them on /healthz.
//
// # Start and stop
//
//	New      builds the links and the listener; opens and binds nothing
//	Start    clock loop → uplinks (outboxes, captures, OnPing) →
//	         downlinks → links (connect in the background) → listener
//	Detach   downlinks (their last acks still go out) → listener and
//	         links closed together: the hubs drop the gateway's interest
//	         before its clients go. Run before the broker shuts down.
//	Close    uplinks (outboxes closed after the broker is down, so that
//	         every message a client had accepted is in one) → clock loop
//
// The uplinks and downlinks subscribe their reply inboxes before the links
// start, so the first connection announces them. After a failed Start,
// Detach and Close stop what was started.
//
// # Lock order
//
//	Node.mu → (nothing): it guards the running uplinks and downlinks
//	and is never held while calling them or the broker.
//	linkLocal.mu, linkConn.mu: never held together, nor while calling
//	the broker.
//	localReceivers.mu → broker locks, only while its watch starts;
//	the interest callbacks (broker locks → localReceivers.mu, then the
//	index's own sublist lock) take nothing else.
//	localDelivery.mu guards the PubAck waiters only.
package node
