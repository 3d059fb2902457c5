// Package mqtt is the MQTT bridge: it connects to a site MQTT broker
// (Mosquitto, a PLC's broker) as a client and moves messages between MQTT
// topics and NATS subjects through a bridge.Bus.
//
// # Clients
//
// Both versions go through paho.golang's paho package (MQTT 5, the
// default, as it is; MQTT 3.1.1 through v311Conn, which rewrites the
// packets between the versions under paho); Config.Version chooses. The
// client's own loop reconnects after a lost connection (every reconnect
// is counted in the Status, the state follows the connection), so Run
// returns only when its context ends or when the broker refuses the connection itself (a CONNACK
// with an error code: unsupported protocol version, bad credentials, a
// refused client id). Retrying cannot fix those, so Run returns the error
// and the bridge.Runner backs off before the next Run; for a version the
// broker refuses the error says so and names the other version.
//
// # Mapping
//
// Topics and subjects convert with core/subject (SubjectFromTopic,
// TopicFromSubject: the mapping nats-server's MQTT support uses). An
// inbound route {from: filter, to: prefix} subscribes to filter on the
// broker and publishes topic t on prefix + SubjectFromTopic(t). An
// outbound route {from: pattern, strip_prefix: p, to: prefix} subscribes
// to pattern on the bus and publishes subject s on prefix +
// TopicFromSubject(s without p).
//
// # Delivery
//
// Inbound QoS 1 and 2 messages of a route with store: true are
// acknowledged to the broker (PUBACK, PUBREC) only after bridge.Store
// returned the local stream's PubAck (paho's manual
// acknowledgement), so a crash between the two loses nothing: the broker
// redelivers what was not acknowledged, in its session (clean_start false
// and a session expiry, the defaults). Each such message carries a
// Nats-Msg-Id made of the bridge's name, the packet id and a hash of the
// topic and payload, so that a redelivery of a message stored before the
// crash is stored once (within the stream's duplicate window; a broker
// reuses packet ids, so two identical messages on one topic with the same
// packet id within the window would be taken for one). A device that sets
// a Nats-Msg-Id user property (MQTT 5) keeps its own id instead, which
// also dedupes its own resends. A failed store is
// retried (the message is not acknowledged meanwhile, and neither are the
// later ones) until it succeeds or Run ends; whatever the reason (no
// stream, a full stream discarding new messages), the message waits at
// the broker. Only a message the stream refuses as too large is dropped
// (counted as too_large) and acknowledged, since it can never be stored.
// QoS 0 messages, and routes without store, are published as core
// messages (Bus.Publish) and acknowledged at once. With MQTT 5 they take
// the inline fast path (inbound.go): decoded in the read buffer under
// paho and handled on its read goroutine, allocating nothing, their
// PUBACKs batched and written as soon as they are published, also on a
// bridge whose other routes store (whose acknowledgements go out on
// paho's tick, every 5 ms, in order among themselves).
//
// An outbound route with a stream (OutboundRoute.Stream, the local stream
// capturing its subjects) takes its messages from a durable consumer on
// that stream (bridge.Consume, one message in flight): each is published
// with the route's QoS and acknowledged to the stream only once the
// broker accepted it (PUBACK or PUBCOMP; at QoS 0 once written). While
// the broker is unreachable the messages wait in the stream; a publish
// that fails is nak'ed and sent again first when the broker is back, so
// the broker sees the stream's order, at least once. Routes without a
// stream copy the messages of a core subscription into a bounded queue
// (Config.QueueLen) published by one goroutine, in order; while the
// broker is unreachable those are dropped and counted as not_connected,
// and a full queue drops as queue_full.
//
// # Headers (MQTT 5)
//
// Inbound: every user property becomes a header field (names or values
// that a NATS header cannot hold, such as a CR or LF, are left out), the
// content type is "Mqtt-Content-Type", the message expiry (seconds)
// "Mqtt-Message-Expiry", the retain flag "Mqtt-Retain: true". Outbound the same fields become the properties again and
// every other header field becomes a user property.
//
// Request and reply: an inbound MQTT 5 message with a response topic, on a
// route without store, is sent as a NATS request; the first reply is
// published to the response topic with the request's correlation data. A
// NATS message with a reply subject on an outbound route is published
// (MQTT 5) with Config.ResponseTopic as its response topic and the reply
// subject as its correlation data; the bridge subscribes to
// ResponseTopic and publishes what a device answers there on the reply
// subject named by the correlation data, if that is a reply the bridge
// is waiting for (for at most Config.RequestTimeout).
//
// # Concurrency
//
// Run owns its client and its goroutines (the outbound sender, one per
// stream route, the storer's completion, MQTT 5 requests in flight) and
// waits for all of them before it returns. Handlers run on the
// libraries' goroutines and on publishers' goroutines (bus
// subscriptions, which never block: they queue or drop). Two mutexes,
// both leaves and never held together: run.mu guards the NATS requests
// waiting for a device's answer, storer.mu the stores waiting for their
// PubAck; each is held only for map operations.
package mqtt
