// Package mqttstate keeps the durable state of leafbox's MQTT listener
// (core/mqtt) for one account: persistent sessions with their
// subscriptions, each session's queue of QoS 1/2 messages with their
// delivery state, incoming QoS 2 packet ids awaiting PUBREL, and retained
// messages. It lives in streams of the account's JetStream engine, as
// nats-server's MQTT keeps $MQTT_sess, $MQTT_msgs and $MQTT_rmsgs, but
// in streams the JetStream API does not show (jetstream's
// OpenInternalStream); any Backend will do, and Memory and Files serve
// tests.
//
// core/mqtt cannot import store/*: the API uses this package's own types
// and cmd/internal/app adapts them.
//
// # Streams
//
// For account A there are five streams, each holding one record kind;
// <c> is a client id's token and <t> a topic's (token.go: a reversible
// base64url form, or for names over 192 bytes a SHA-256 with a collision
// counter; records carry the full name):
//
//	mqtt.A.sess    $MQTT.sess.<c>               session (JSON), 1 per subject
//	mqtt.A.msgs    $MQTT.msgs.<c>               queued messages, in Enqueue order
//	mqtt.A.out     $MQTT.out.<c>.<msgs seq>     delivery state of one queued message, 1 per subject
//	mqtt.A.qos2in  $MQTT.qos2in.<c>.<pid>       incoming QoS 2 packet id, 1 per subject
//	mqtt.A.rmsgs   $MQTT.rmsgs.<t>              retained message, 1 per subject
//
// A queued message's sequence is its msgs stream sequence. EnqueueSent
// stores the packet id of a message sent at once inside its msgs record
// (one write, not two). Assigning a
// packet id or noting a PUBREC writes one small out record (the subject's
// previous one is evicted by the one-per-subject limit): the session
// record is never rewritten for a message's state, and Release removes the
// message and its out record. Record encodings are in codec.go.
//
// # Durability
//
// Every write (PutSession, DeleteSession, Enqueue, AssignPacketID,
// MarkPubrec, Release, the QoS 2 calls, SetRetained) returns once the
// Backend's Store, Remove or Purge returned. With the engine in sync
// "always" mode (sync_interval ≤ 0), or Files with SyncInterval 0, that is
// after fsync: every acknowledged write survives a kill -9 or power cut,
// and writes of different sessions share fsyncs (group commit). With a
// positive interval a power cut loses at most that window (a kill -9 of
// the process alone loses nothing: the data is in the page cache); what is
// left is consistent: on Open the newest record of each subject wins and
// older ones are removed, and a queued message, delivery state or QoS 2
// record without its session (a DeleteSession cut short: the session
// record goes first) is removed, as is a delivery state whose message was
// released.
//
// # Expiry and limits
//
// A session expires ExpiryInterval seconds after DisconnectedAt
// (NeverExpire never; a connected session, DisconnectedAt zero, never):
// Open deletes expired sessions, LoadSessions leaves them out, and Sweep
// (every Options.SweepInterval in the background) deletes them with their
// queues, drops expired retained messages and expired queued messages not
// yet sent. Retained leaves out expired messages at once. Options bound
// sessions, per-session queues and retained messages and bytes; hitting a
// limit is an error wrapping ErrMaxSessions, ErrQueueFull, ErrMaxRetained
// or ErrMaxRetainedBytes, and nothing is written.
//
// # Concurrency
//
// A Store is safe for concurrent use. Writes to one session are
// serialised; writes to different sessions run in parallel.
package mqttstate
