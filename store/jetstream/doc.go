// Package jetstream is leafbox's JetStream engine: streams on top of
// store.Stream, consumers with acknowledgements and redelivery, retention
// (limits, interest, workqueue), publish deduplication, and the $JS.API
// request handlers that nats.go, nats.js and the nats CLI talk to.
//
// The engine reaches the broker only through Bus, an interface it declares
// itself and that the server's in-process connection satisfies; it never
// imports core/server. Wire JSON types, defaults, validation and the API
// error table come from store/jsapi; message storage from store/memstore
// and store/filestore.
//
// # Lifecycle
//
//	eng, err := jetstream.New(jetstream.Config{StoreDir: dir, Domain: "gw"}, bus)
//	err = eng.Start()   // restore file streams, subscribe $JS.API.>, $JS.ACK.>, $JS.FC.>
//	...
//	err = eng.Close()   // stop consumers, flush their state, close stores
//
// # Domains
//
// With Config.Domain D the engine also serves the nine subjects nats-server
// maps for a domain: $JS.D.API.INFO and $JS.D.API.{STREAM,CONSUMER,DIRECT,
// META,SERVER,ACCOUNT}.> as the same requests under $JS.API, and
// $JS.D.API.$KV.> and $JS.D.API.$OBJ.> republished on $KV.> and $OBJ.>
// (KeyValue and object store writes through a domain). A leaf link
// announces these subscriptions to its hub, so hub clients reach this
// engine with jetstream.NewWithDomain(nc, D), and a nats-server hub can
// source our streams: it creates a "direct" push consumer with flow
// control and heartbeats, first asking for API levels 5 and 4, which are
// refused with 10185 so that it falls back to a request this engine serves.
//
// # Goroutines
//
// Publishes, API requests and acks are handled on the goroutine that
// delivers them (the publisher's, see Bus.Subscribe). Each consumer owns one
// goroutine, its pump (pump.go), which is the only code that publishes to
// the consumer's delivery subject or to its pull requests' inboxes, so
// deliveries, heartbeats, flow-control requests and pull status messages
// reach a client in the order they were decided. Time enters a consumer
// only through its pump: one step takes "now" and returns what to publish
// and when to wake (ack wait, backoff, NAK delay, pull expiry, heartbeats,
// inactivity, state flush). In sync-always mode each file stream also owns
// a committer goroutine (commit.go) that fsyncs and then sends PubAcks, in
// batches.
//
// # Lock order
//
//	Engine.mu → stream.mu → stream.consMu → consumer.mu
//
// The capture index behind CapturingStream (a core/sublist trie of the
// streams' subjects) has its own locks, taken last, as does the push
// index (interest.go), whose lock is also taken under the broker's
// subscription locks when the Bus reports a change, and so do the
// broker's subscriptions behind Bus.HasInterest, which the engine asks
// with its locks held (a bound push consumer, an advisory's listener).
//
// No lock is held while publishing to the Bus: Bus handlers run
// synchronously on the publishing goroutine and may re-enter the engine.
// stream.mu serialises writes to one stream (publish, purge, message
// delete, retention removals, consumer creation) so that consumers learn of
// new sequences in order and their pending counts stay exact; consumer.mu
// guards one consumer's delivery and ack state. The publish path reads the
// consumers from an immutable snapshot.
//
// # Durability
//
// Config.SyncInterval ≤ 0 is "always": a PubAck from a file stream leaves
// only after its message is fsynced; concurrent and pipelined publishes
// share fsyncs; a stream with persist_mode async has no committer and acks
// at once, its file store syncing on its own timer (commitBackstop). A
// positive interval acks at once and bounds the loss window of a power
// cut. Atomic batches (batch.go) are stored with one store call and, in a
// file stream, one write; what a crash can leave of one is described
// there. Consumer state (delivered, ack floor, pending,
// redelivery counts) is written to the consumer's ConsumerStore at most
// every 200ms and on Close. The bound on an ack: it is on disk within
// 200ms with SyncInterval "always" (each write is fsynced), within 200ms
// plus SyncInterval otherwise (the consumer store fsyncs on that
// interval); a crash may redeliver acks from that window (at-least-once),
// never lose messages. An AckSync (an ack with a reply subject, nats.go's
// DoubleAck) is answered only once the consumer's state including it is
// written and fsynced, at any SyncInterval, so after a crash or power cut
// nothing acknowledged that way is redelivered; if the write or fsync
// fails the ack is applied but not answered (acksync_test.go).
//
// # On disk
//
// File streams live under Config.StoreDir (in leafbox, the streams/
// subtree of the store directory: store/storedir):
//
//	<StoreDir>/<stream>/meta.json                  stream config + created time
//	<StoreDir>/<stream>/msgs/                      filestore blocks
//	<StoreDir>/<stream>/obs/<consumer>/meta.json   consumer config + created time
//	<StoreDir>/<stream>/obs/<consumer>/            filestore consumer state log
//	<StoreDir>/<a.b>/msgs/                         internal stream (OpenInternalStream): no
//	                                               meta.json, a name with '.', hidden from the API
//
// meta.json files are written to a temporary file, fsynced and renamed
// over the old one; the rename fsyncs the directory (store/vfs). Consumers
// with mem_storage, and all consumers of memory streams, are not persisted.
// A directory that fails to load is logged and skipped. STREAM.RESTORE
// builds a stream in <StoreDir>/.restore-<stream>/ and renames it into
// place once the archive checks (api_snapshot.go); the snapshot archive's
// layout, version 1, is documented in snapshot.go.
//
// # Ack subjects
//
// Deliveries carry the v1 reply nats-server v2.15 emits by default:
//
//	$JS.ACK.<stream>.<consumer>.<delivered>.<stream-seq>.<consumer-seq>.<timestamp-ns>.<pending>
//
// Acks in that form and in the v2 form
// ($JS.ACK.<domain>.<account-hash>.<stream>.<consumer>.… with at least 11
// tokens) are accepted. Flow-control requests carry
// $JS.FC.<stream>.<consumer>.<id>.
//
// # Priority groups
//
// Pull consumers take nats-server's priority_policy (overflow,
// pinned_client, prioritized), priority_groups and priority_timeout;
// pull requests their group, min_pending, min_ack_pending, pin id and
// priority. A pinned_client consumer's deliveries carry Nats-Pin-Id,
// requests with a stale pin are answered 423, the pin ends after
// priority_timeout without a request from its client or on
// $JS.API.CONSUMER.UNPIN.<stream>.<consumer>, with the
// CONSUMER.PINNED and CONSUMER.UNPINNED advisories; consumer info shows
// the pin in priority_groups. The rules are in priority.go.
//
// # Push interest
//
// A push consumer delivers while its deliver subject has interest
// (Bus.HasInterest: a client, a queue group member, a leaf link's
// subscription). When the Bus is an InterestWatcher the engine learns of
// every subscription added or removed and kicks the push consumers whose
// deliver subject it may match (interest.go), so a consumer without
// interest sets no timer and starts delivering as soon as someone
// subscribes; on another Bus it looks again every 20 to 250 ms.
//
// # Not implemented
//
// The clustered advisories (leader elected, quorum lost) and the
// ack-sampling metrics ($JS.EVENT.METRIC.>); restoring a stream that has
// sources or a mirror.
// Sources and mirrors are in source.go, snapshots and restores in
// api_snapshot.go.
//
// # Advisories
//
// advisory.go publishes nats-server's advisories on $JS.EVENT.ADVISORY.>
// (stream and consumer actions, consumer pause, NAK, TERM, max
// deliveries, priority group pinned and unpinned, API audit; shapes in
// store/jsapi/advisory.go). Each is
// built only when its subject has interest, and none is published with a
// lock held: max-deliveries events are noted under consumer.mu and
// published by the pump after the step's deliveries.
package jetstream
