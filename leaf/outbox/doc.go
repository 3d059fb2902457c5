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
// supplies the stream and a Hub, the path toward the hub.
// cmd/internal/app wires both.
//
// # Accepted means durable
//
// Capture stores the message synchronously. Called from an in-process
// subscription handler, it runs on the publisher's read goroutine, before
// the broker reads the publisher's next PING. With a stream that syncs in
// Store (filestore SyncInterval 0) the message is on disk when Capture
// returns. With a store.Syncer whose SyncDeferred is true (a filestore
// opened with a SyncInterval, what cmd/internal/app uses) Store only
// writes, and Sync, which the
// broker runs before answering a PING, fsyncs every capture since the last
// one at once: a burst of captures shares one fsync, and the publisher's
// PONG still means its messages survive kill -9 and power loss.
//
// # Forwarding
//
// One goroutine forwards. It waits for Hub.WaitReady, then reads the
// stream from its first message in sequence order, up to the last durable
// message (a message still awaiting its fsync could be lost by a power
// cut; with a store.Syncer the forwarder runs Sync itself when it reaches such
// messages), and publishes each message toward the hub as a JetStream
// publish request: the subject prefixed with HubPrefix, the header
// extended with
//
//	Nats-Expected-Stream: <stream>            (when Config.Stream is set)
//
// and the reply subject InboxPrefix()+<round>.<sequence>. The window of
// messages in flight starts each round at Window and follows the link's
// bandwidth-delay product up to MaxWindow (window.go). A success PubAck ({"stream":..,"seq":..}) for the
// expected stream removes the message. An error PubAck, a PubAck for
// another stream, a publish the hub cannot receive, or a PubAck missing
// after AckTimeout ends the round: the forwarder forgets what was in
// flight, waits with exponential backoff and starts again from the
// stream's first message. Messages sent twice carry the same Nats-Msg-Id,
// so the hub stream's duplicate window stores them once. A PubAck that
// arrives late, from an earlier round, still removes its message: the hub
// has stored it.
//
// # Batches
//
// With Config.Batch (what the gateway sets) the forwarder sends a round as
// JetStream fast batches, as nats-server v2.15.2 offers them to a stream
// with allow_batched: no PubAck per message, a flow ack every few hundred
// messages and one PubAck when a batch commits. The batch is named in each
// message's reply subject, which the hub parses:
//
//	InboxPrefix()+<batch id>.<flow>.fail.<batch seq>.<op>.$FI
//
// The batch id is 8 random characters, new for every batch; flow is the
// most messages between two flow acks the forwarder asks for (half of
// Config.Window, 128 by default, at most 500); "fail" is the gap mode:
// at the first message it cannot store (an error, a gap in the batch
// sequence) the hub stores nothing more of the batch and commits what it
// has, so a flow ack {"type":"ack","seq":N} means batch sequences 1..N are
// all in the stream, as N PubAcks would; op is 0 for the first message,
// 1 for the next ones, 2 for a batch of one (the only message captured
// when the batch would start: answered by a PubAck, as a per-message
// publish is), 3 for the end-of-batch message that commits without being
// stored. The forwarder sends that commit once it has caught up with the
// captures and none came for 20 ms (batchLinger), and only after the hub
// answered the batch's first message with a flow ack; the PubAck
// {"stream":..,"seq":..,"batch":..,"count":N} removes what the flow acks
// did not. A batch starts only once the one before it is closed by its
// PubAck: the hub checks the order within a batch (its sequence), not
// across batches, and a stream leader that dies takes with it what it had
// not replicated, so a later batch the next leader stored would leave the
// earlier batch's re-sent messages behind it. Captures that come while a
// commit's PubAck is awaited wait in the outbox and start the next batch
// together: at a steady rate a batch holds a round trip's worth.
//
// Each message keeps its Nats-Msg-Id: after a cut, a crash or a hub
// restart the open batch is lost (the hub forgets it after 10 s, or at
// once) and the next round sends again from the oldest message not
// acknowledged, in a new batch, where the hub's duplicate window drops
// what it stored already. Nats-Expected-Stream goes with a batch's first
// message only: the hub binds a batch to the stream that took that
// message, and another stream answers any later message of it with
// "batch publish ID unknown" (10208), so one check guards the whole
// batch. A gap, an error or a missing PubAck ends the round as for
// per-message publishes; an error about one message is a refusal of that
// message (see Dead letters). What fast batches do not report is a
// duplicate per message: HubDuplicatesUnexpected counts only per-message
// publishes.
//
// A hub stream without allow_batched answers the first message with
// 10205 ("batch publish is disabled"), and a nats-server before fast
// batches takes the reply for an ordinary one and answers with a plain
// PubAck: either way the forwarder logs "uplink hub does not take fast
// batch publishes", goes on at once with a PubAck per message (Status.Mode
// per_message), and tries batches again after 5 minutes. The end-of-batch
// message is never sent before the hub showed it takes batches, so an old
// hub never stores it.
//
// What each forwarded message carries on the link, and why:
//
//	HMSG <hub subject> <reply> <header bytes> <total bytes>  routing; the stream captures by subject
//	<reply> as above                                         the batch, its order and where the acks go
//	NATS/1.0                                                 the header block
//	Nats-Msg-Id: <server>.<uplink>.<epoch>.<n>               exactly once across resends; names the source
//	Leafbox-Time: <RFC 3339>, or Leafbox-Boot-Id and
//	Leafbox-Mono while the clock is not trusted               the capture time
//	Nats-Expected-Stream: <stream>                           first message of a batch only
//	<payload>
//
// and the hub sends back one flow ack per flow messages (about 100 B) and
// one PubAck per batch, where a per-message publish takes a PubAck of
// about 85 B each.
//
// # Message ids
//
// Capture fixes each message's id and stores it with the message, unless
// the publisher set a Nats-Msg-Id of its own (kept as it is):
//
//	Nats-Msg-Id: <server name>.<uplink name>.<epoch>.<n>
//
// The epoch is 10 random characters (lowercase base32, 50 bits) chosen
// by New, each time the outbox is opened; n counts that Outbox's captures
// from 1 (IDPrefix is everything before n). The hub's duplicate window
// drops a second message with an id it holds, so an id must be sent again
// exactly when its message is, and never with another message:
//
//   - A message re-sent after a failed round, a restart or kill -9 is
//     read back from the stream with the id it was stored with.
//   - A wiped outbox (a re-imaged or swapped SD card, a changed store
//     directory) starts again at sequence 1, and an outbox restored from
//     an old copy re-uses the sequences after the copy's last one, which
//     the hub may hold for later messages. An id made from the sequence
//     alone, as it was before, repeats in both cases and the hub drops
//     the new messages while acknowledging them. The epoch is new with
//     every opening, so new captures never repeat an id, while the
//     messages the old copy still holds keep theirs: those the hub stored
//     already are dropped as duplicates, as they must be.
//   - An epoch kept with the outbox would be restored with an old copy
//     too and repeat its ids; a random one made at each opening needs no
//     state. Storing the id costs some 50 bytes per message on disk and
//     none on the wire, where it travelled anyway.
//
// A message stored without a Nats-Msg-Id (captured by a leafbox before
// ids were fixed at capture) is sent with its old id,
// <server name>.<uplink name>.<outbox sequence>, so its copies are still
// dropped. The server name is the gateway's own (server_name, by default
// derived from its identity, leaf/identity), stable across restarts: the
// random server id of each start would change the old ids.
//
// Order on the hub is the outbox's order as long as the hub stores what it
// receives in the order received; a retried round resends from the oldest
// message not yet acknowledged.
//
// # Dead letters: refusals that never end
//
// A failed message is either transient (retried in order, as above) or
// refused for good. Permanent are: an error PubAck whose err_code is about
// the message itself (10060 expected stream mismatch, 10054 and 10097 too
// large for the stream, a publisher's expectation header such as 10071,
// a sealed stream, a per-message TTL, counter or schedule header the
// stream refuses: see permanentCodes in refusal.go); a *RefusedError the
// Hub returns from Publish for what it knows before sending (a message
// above the hub's max_payload, which would make the hub close the link;
// a subject the link may not publish, or that the hub answered with a
// "Permissions Violation for Publish" -ERR); and "no stream captures the
// subject". That last one is ambiguous on its own: the hub has no
// interest in the subject (ErrNoResponders from Publish) or sends no
// PubAck also while it restarts and restores its streams. So with
// Config.HubDomain the forwarder asks the hub's JetStream, as the official
// clients look a stream up by subject:
//
//	$JS.<hub domain>.API.STREAM.NAMES  {"subject":"<hub subject>"}
//
// with the reply subject InboxPrefix()+"q."+<n>, over the same path as the
// messages (the leaf link denies $JS.API.>, so the hub must have a
// domain). Only a stream names response with no stream is a refusal
// (ReasonNoStream); an API error (10008 during a leader election), no
// answer within 2 s, or no interest in the API at all is transient.
// Everything else is transient: no responders without HubDomain, missing
// PubAcks, a lost link, and JetStream's temporary errors (10008, 10023,
// 10039, 10047, 10076, 10077, 10118, 10158, 10163, unknown codes).
//
// Each permanent refusal is counted (Status.Refusals, LastRejection). At
// the Config.DeadLetterAfter-th refusal of one message (3 by default; the
// refusals of the rounds between are retried with the usual backoff) it is
// moved to Config.DeadLetter: stored there, durably, with its original
// subject, header and payload, the Nats-Msg-Id it was sent with, and
//
//	Leafbox-Dead-Reason: no_stream | wrong_stream | too_large | permission | hub_error | duplicate_id
//	Leafbox-Dead-Error: <the hub's error, one line>
//	Leafbox-Dead-Time: <RFC 3339 UTC>
//	Leafbox-Dead-Seq: <outbox sequence>
//	Leafbox-Dead-Refusals: <count>
//
// and only then removed from the outbox (a crash between the two leaves a
// copy in both, never in neither). It is counted in Status.DeadLettered
// and Dropped["rejected_by_hub"], and forwarding goes on with the next
// message without ending the round; the order of the others is kept. A
// dead-lettered message is not lost: DeadLetters lists them and Requeue
// (RequeueAll) moves them back to the outbox's tail, durable there before
// they leave the dead-letter stream, without their Leafbox-Dead-* headers.
// They keep their original Nats-Msg-Id, so that the hub's duplicate window
// still drops one the hub did store after all; a message refused as
// duplicate_id gets a new one (the forwarder's, for its new sequence).
//
// A PubAck with "duplicate": true for a message sent for the first time
// (captured by this process, never sent before, with the forwarder's own
// Nats-Msg-Id) means the hub dropped a message it never had: its id
// collided with another's. It is counted (Status.HubDuplicatesUnexpected),
// not acknowledged, and dead-lettered at once as duplicate_id, so that a
// technician can requeue it with a fresh id. A duplicate PubAck after a
// resend, or for a message captured before the process started, is an
// ordinary acknowledgement. (A late PubAck from an earlier round carries
// no "first send" mark and is taken as ordinary.)
//
// The dead-letter stream's own limits bound it (cmd/internal/app gives it
// the outbox's max_bytes and max_msgs, discarding old): what it evicts is
// counted as dropped "dead_letter_limits".
//
// Without Config.DeadLetter refusals are only counted and the message is
// retried in order forever, as it was before dead letters.
//
// # Limits and loss
//
// The stream's limits (MaxMsgs, MaxBytes, Discard) bound the backlog.
// Messages the stream evicts under DiscardOld are counted as dropped with
// reason "limits" (computed from the counts: stored since open, plus what
// was there at open, minus acknowledged, minus backlog, minus expired);
// messages expired by Config.MaxAge count as "max_age"; messages rejected
// under DiscardNew count as "rejected"; messages the store cannot take
// because the disk is full (store.ErrStoreFull, ENOSPC) as "store_full";
// other store errors as "store_error"; messages moved to the dead-letter
// stream as "rejected_by_hub" (see above). Nothing is dropped silently. On a
// full disk the backlog stays and is forwarded, but a message is removed
// only when its removal can be written, so the forwarder retries until
// space returns; the hub's duplicate window absorbs the copies. Bound the
// outbox with MaxBytes below the free space so that the oldest messages
// are dropped by policy before the disk fills.
//
// # Time without a real-time clock
//
// A gateway without a battery-backed clock boots at 1970. Aging its
// backlog by the wall clock (a stream MaxAge) would wipe it the moment
// NTP sets the clock to today. So the stream gets no MaxAge; the outbox
// ages messages itself, with Config.Clock (leaf/clock). Capture stamps
// every message with headers, which travel to the hub with the original
// subject and payload: while the clock is not trusted
//
//	Leafbox-Boot-Id: <kernel boot id>
//	Leafbox-Mono: <nanoseconds since boot, CLOCK_BOOTTIME>
//
// and once it is, only
//
//	Leafbox-Time: <RFC 3339 UTC>
//
// (a publisher's own Leafbox-* stamp is kept). An untrusted message of
// the current boot is aged on the monotonic clock, whatever the wall clock
// did; a trusted one by its Leafbox-Time; one of an earlier boot captured
// untrusted has no age of its own. Since messages
// are captured in sequence order, a message known to be older than MaxAge
// proves all earlier ones older: the outbox removes everything below the
// newest such message and nothing after it, so the backlog stays in
// sequence order. A hub consumer can date an untrusted message from a
// later trusted one of the same boot: time = Leafbox-Time − (its
// Leafbox-Mono − this Leafbox-Mono).
//
// # Scheduling
//
// The outboxes of a gateway share one Scheduler (Config.Scheduler; see its
// comment for the exact order of waits). Before each publish the forwarder
// asks it for a turn with the message's size: subject, header and payload
// bytes as published. Config.Priority orders the outboxes (higher first;
// equal classes take turns), Config.MaxRate and SchedulerConfig.MaxRate cap
// the bytes per second of one outbox and of all, and Config.DailyBudget
// and SchedulerConfig.DailyBudget meter the bytes per UTC day: an outbox
// out of its own budget stops until 00:00 UTC, and when the total budget
// is out only the highest class still forwards. Status.Waiting says which
// of these holds a forwarder. Acks keep being applied while it is held.
//
// After the hub becomes ready, a forwarder with a backlog waits a random
// time up to Config.DrainJitter before its round, so that gateways coming
// back together do not drain at the same instant.
//
// # Watchdog, hub sequences and rates
//
// A ticker (about 1 s; shorter for a short WatchdogAfter) updates the drain
// rate (Status.RateMsgs and RateBytes, a moving average of acknowledged
// messages and bytes per second with a 3 s time constant) and Status.ETA,
// and runs the stuck-backlog watchdog: when the forwarder is forwarding,
// not held by the scheduler, and has a backlog but made no publish and
// received no ack for Config.WatchdogAfter, it cancels the round (counted
// in Status.WatchdogRearms, reported as ErrStuck) and a new round starts
// from the stream's first message.
//
// JetStream numbers a stream's messages upward for its whole life, purges
// included. The forwarder remembers the sequence of the last new (not
// duplicate) PubAck per hub stream; a new PubAck at or below it means the
// stream was deleted and created again: Status.StreamResets counts it and
// a warning is logged, and forwarding goes on. The new stream's duplicate
// window is empty, so a message retried across the reset may be stored
// twice.
//
// # State files
//
// Config.StateFile keeps the last hub sequences, and
// SchedulerConfig.StateFile the day's budget usage (total and per
// uplink), so that both survive a restart. Each is one JSON object
//
//	{"version":1,"crc32c":<CRC-32C of body>,"body":{...}}
//
// written to <file>.tmp, synced, and renamed over the file (the directory
// is synced after the rename). They are written at most once a second
// while they change and on Close: a crash forgets at most that second, so
// the budget may overshoot by that much, and a lagging hub sequence can
// only hide a reset, never invent one. A file that fails its version or
// checksum check is refused with ErrBadState; removing it starts over.
//
// # Waiting on the status
//
// Wait(ctx, cond) blocks until cond holds for a fresh Status, checked at
// once and after every change the outbox makes (a capture, a publish, an
// ack batch, a refusal, a dead letter, a requeue, an expiry, a state or
// error change); it never polls. A change costs its maker one atomic load
// while no one waits (core/changes), so Capture stays within its
// allocation budget: a capture through the broker of a subject seen
// before allocates nothing (TestCaptureAllocs).
//
// # Lock order
//
//	Outbox.mu → runstate.Tracker.mu
//	requeueMu → syncMu → the stream's and the dead-letter stream's locks
//	Scheduler.saveMu → Scheduler.mu
//
// Outbox.mu guards Start and Close; under it only the run state is set
// and the forwarder's context cancelled. syncMu serializes Sync and is
// held across the stream's fsync (store.Syncer), so a burst of PINGs
// shares one fsync; requeueMu serializes Requeue, which stores into the
// outbox, syncs it and removes from the dead-letter stream. ackMu (the
// replies HandleReply queues for the forwarder), meter.mu (rates, hub
// sequences, the watchdog's round), Scheduler.mu (turns, budgets, slots;
// the scheduler calls no outbox), the Tracker's mutex and its changes.Notifier
// mutex, and the subject.Names writers' mutex are leaves: nothing is
// called and no other lock is taken while one is held. Status takes the
// stream's, meter.mu, Scheduler.mu and the Tracker's lock one after the
// other, never two at once. No lock is held while the forwarder calls
// the Hub or waits for the scheduler, and Capture holds none of the
// outbox's own while it calls the stream.
package outbox
