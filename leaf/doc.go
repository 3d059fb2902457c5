// Package leaf speaks the leafnode protocol as nats-server v2.15.2 does
// (server/leafnode.go) on both sides: a Link connects the local broker to
// a nats-server hub as a solicited leafnode ("spoke"), and a Listener
// accepts leafs (other gateways, nats-server leafnode remotes). Link.Publish
// sends to one hub only, for the uplinks and downlinks.
//
// # Use
//
//	link, err := leaf.New(leaf.Config{URLs: []string{"nats-leaf://hub:7422"}}, local, logger)
//	err = link.Start(ctx)   // returns at once; the link connects and reconnects on its own
//	st := link.Status()     // for /leafz
//	err = link.Close()
//
// The link reaches the local broker only through Local, which it declares;
// cmd/internal/app adapts *server.Server to it. Flush and WaitConnected
// let callers (and tests) wait on the protocol instead of sleeping.
//
// # Handshake
//
// The hub writes INFO first. The link checks it is a leafnode port's INFO
// (client_id and leafnode_urls or info_on_connect), upgrades to TLS when
// the hub or the configuration asks, and negotiates S2 compression: if
// both sides want it, the link writes its own plain INFO carrying its mode
// (s2_auto stays "s2_auto", otherwise the level), switches both directions
// to S2 right after that line, and reads the hub's second INFO, now
// compressed. Then it sends CONNECT (name, server_id, remote_account,
// headers, compress_mode, deny_pub, domain, and jwt+sig, nkey+sig or
// user/pass/token) and waits for the INFO with connect_info, which carries
// the hub account and the import/export permissions. Only then does it
// send LS+ for the local interest; an earlier LS+ could arrive before the
// hub switched its reader.
//
// # Interest and messages
//
// Local interest goes up as LS+/LS-: plain subjects when their count moves
// between 0 and 1, queue groups with their member count as weight on every
// change. Interest the link itself creates (for the hub) is never sent up;
// neither is anything the hub's import permissions, deny_imports or the
// JetStream deny set ($JS.API.>, $KV.>, $OBJ.>) exclude. Hub interest
// that the deny set or deny_exports covers entirely (the hub's own
// $JS.API.>) is ignored, and requests for our own JetStream domain
// ($JS.<domain>.API.>) never leave. The link also
// announces a loop-detection subject $LDS.<hash of server id and account>;
// a hub that sends it back reveals a loop: -ERR, close, wait 30s.
//
// Hub interest comes down as LS+/LS-. For each subject the link subscribes
// locally through a no-echo in-process connection; the handler copies a
// matching local message into the outbound buffer as LMSG (HMSG with
// headers, "+ reply queues" or "| queues" when queue groups are named).
// The link forwards by the subject the broker routed a message by: for a
// JetStream delivery (routed to a deliver subject or pull inbox, shown
// under the stored message's subject) the LMSG goes to the deliver subject
// and the stored subject rides after '@' in the ack reply, as nats-server
// sends it; this is how a hub stream sourcing one of our streams, or a hub
// client's consumer, gets our deliveries.
// A message matching several hub subjects is sent once: only the handler
// of the smallest matching subject sends it. A hub queue group is named
// only when the local account has no member of it, because nats-server
// prefers local queue members over a leaf; so a queue group with members
// on both sides serves each side's publishers locally, and every message
// reaches one member.
//
// Messages from the hub are published locally through the same no-echo
// connection, so they never return to the hub. With a LocalConn that also
// implements QueueFilterPublisher, only the queue groups the hub named
// receive them (nats-server's rule); without it, local queue groups
// matching the subject receive them too. JetStream push deliveries carry
// the stream subject after '@' in the ack reply; it is shown to the local
// subscriber and stripped from the reply.
//
// # Accepting leafs
//
// Listener is the other side of the protocol: leafs (other leafbox
// gateways, nats-server leafnode remotes) attach to it. Each leaf gets an
// AcceptConn, a combined in-process connection: its subscriptions stand
// for the leaf's LS+ (a queue group of weight w as min(w, 128) local
// members), and the broker hands it each message once with the queue
// groups it chose the leaf for, which the LMSG names. So a solicited Link
// of the same server announces an attached leaf's queue groups to its hub
// as queue interest with that weight, and a queue group spanning hub,
// this server and the leaf delivers each message once. JetStream
// deliveries cross with the '@' reply encoding both ways, and requests
// for our own domain are never sent to a leaf.
//
// # Reconnect
//
// After a failure the link waits ReconnectMin·2^n, capped at ReconnectMax,
// of which the fraction ReconnectJitter is random (a fleet of gateways
// spreads out after a hub restart), rotating through the configured URLs
// and the hub's leafnode_urls. A connection that registered resets n. The
// hub's errors set floors: a loop or a cluster name clash 30s, a version
// below min_version 5s. An authorization failure never registers, so the
// backoff keeps growing. On every connection the full interest is sent
// again, so subscriptions made during an outage take effect then.
//
// # One connection core
//
// Both sides run every connection on the same core (conn.go): the
// solicited side's session and the accepting side's peer add only their
// handshake, their interest and their delivery rules. The core's
// behaviour is nats-server's for every connection kind:
//   - PING is answered with PONG; every PingInterval a PING goes out, and
//     each PONG ends the oldest PING and measures the RTT (Status.RTT,
//     AcceptedStatus.RTT). With s2_auto the RTT picks the level through
//     the side's RTTThresholds.
//   - When MaxPingsOut PINGs are unanswered: -ERR 'Stale Connection', then
//     close.
//   - An operation the parser refuses: -ERR 'Unknown Protocol Operation',
//     then close.
//   - More than MaxPending bytes queued, or a write that misses
//     WriteDeadline: closed without -ERR as a slow consumer, and counted.
//
// The last lines of a closing connection (an -ERR) get at most a second
// to be written.
//
// # Goroutines, ownership and lock order
//
// Per connection, the run goroutine does the handshake and then reads; the
// writer goroutine is the only writer afterwards: it writes whatever is
// queued in one call (so many messages share a write and an S2 block) and
// sends the keepalive PINGs. Local publishers run the forwarding
// handlers on their own goroutines and only append to the outbound buffer.
//
//	broker locks (interest watch) → Link.mu → session.mu
//	broker locks (interest watch) → peer.mu; Listener.relayMu → peer.mu
//
// Link.mu guards the local interest table and the current connection;
// session.mu (the core's mu) guards the outbound buffer and the PING
// queue; peer.mu (the same core mutex) also guards the interest the leaf
// is told of. Listener.mu is never held while taking a peer's lock. No lock of the
// link is held while calling Local, whose interest callback may run under
// the broker's locks. The hub interest table is changed only by the run
// goroutine and read by handlers through a concurrent sublist.
//
// # Slow consumer
//
// The link gets a client's slow-consumer policy: when more than MaxPending
// bytes wait for the hub, or a write does not finish within WriteDeadline,
// the connection is closed, what was queued is dropped (core NATS is
// at-most-once), Status.SlowConsumers counts it, and the link reconnects.
// There is no queue while disconnected: the local subscriptions for hub
// interest go away with the connection. Lossless delivery across outages
// is leaf/outbox's job.
package leaf
