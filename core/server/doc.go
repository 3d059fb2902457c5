// Package server is leafbox's NATS client-protocol broker: the listener,
// client connections, subscription routing, authentication and the data
// behind the monitoring endpoints.
//
// # Connections
//
// Each client connection has two goroutines. readLoop is the only code that
// reads the net.Conn: it hands bytes to a proto.Parser and processes each
// operation. writeLoop writes it: it takes whatever the connection's
// outbound buffer holds and writes it in one call, so many messages share a
// write. Producers append to a target's outbound buffer under the target's
// lock and, once per read batch, flush all connections they touched, never
// once per message. When a read batch wrote to one other connection
// (a subscriber, a reply), flushing writes its pending bytes on the
// producer's own goroutine if no other goroutine is writing to it, with
// one non-blocking write (a fan-out wakes the writers, which write in
// parallel), and wakes the target's writeLoop for what the
// socket did not take (or when the connection is not plain TCP); an
// in-process publisher does the same per message unless messages come in a
// burst, which writeLoop batches. Waking a writer on another thread costs
// more than a small write, and one writer at a time keeps each
// connection's bytes in order; a slow consumer never blocks a producer,
// since only writeLoop waits on the socket (see inline.go).
//
// # Routing
//
// Subscriptions live in one sublist per account. A published message goes
// to every matching plain subscription and to one random member of each
// matching queue group. The PUB → match → MSG path allocates nothing: the
// parser returns slices into the read buffer, the sublist match cache hits
// without allocating, and delivery appends into reused outbound buffers.
//
// # Lock order
//
//	Server.mu → client.mu
//	account.watchMu → sublist locks
//
// A goroutine holds at most one client.mu at a time: a producer never holds
// its own lock while appending to another client. account.watchMu orders
// subscription changes with interest watchers (the leaf link); it is never
// taken while a client.mu is held, and it is held for one subscription or
// one removal batch at a time. Sublist locks are leaves: the sublist calls
// nothing back. Statistics are atomics, read without locks by the
// monitoring endpoints; publishers add theirs once per read batch.
//
// # Closing connections
//
// A closing connection (and an in-process Conn's Close, and a reload that
// revokes subscriptions) removes its subscriptions with account.removeSubs:
// up to 256 per hold of account.watchMu and the sublist lock, through
// sublist.RemoveBatch, never one hold per subscription. Removal drops
// cached match results rather than rewriting them, with a bounded cost per
// batch (see package sublist). So when thousands of connections close at
// once, a new client's SUB, and its publish's first cache miss, wait for at
// most one short hold per closing batch, never for a rewrite of the whole
// match cache per removed subscription (issue 8's mass-disconnect stall).
//
// # In-process connections
//
// Conn (InProcess) publishes and subscribes without a socket, for JetStream,
// bridges and the leaf link. Its handlers run on the publisher's goroutine
// with borrowed, read-only slices. PublishBytes and PublishQueuesBytes take
// the subjects and reply as borrowed bytes and, like PUB → MSG, allocate
// nothing once the route's match is cached; a leaf link delivers every hub
// message through them.
//
// # Slow consumers
//
// A connection whose pending outbound bytes exceed Options.MaxPending, or
// whose write does not complete within Options.WriteDeadline, is closed
// without an -ERR (as nats-server does) and counted in slow_consumers; the
// publisher and every other connection carry on.
//
// # Logs
//
// Connection lines follow nats-server's levels: a client connection's
// creation, its accepted CONNECT (with the client's name) and its close
// (with the /connz reason) are DEBUG, each with cid and addr. Failed
// authentications and permission violations are WARN, naming the client,
// the user and the subject, and rate limited per kind (logLimiter): a
// misbehaving client can cause thousands a second. Secrets never reach a
// line: only user names, public keys, subjects and auth's error texts are
// logged.
package server
