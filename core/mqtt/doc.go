// Package mqtt is leafbox's MQTT 3.1.1 and 5 listener: a protocol front
// end onto the router, like a client connection. Each client's session
// subscribes the broker on the subjects its topic filters map to
// (core/subject's mapping, shared with the MQTT bridge and equal to
// nats-server's) and publishes on the subjects of its topics, so MQTT
// devices and NATS clients share one subject space, one set of accounts
// and one set of permissions.
//
// # Codec
//
// paho.golang's packets decode and encode MQTT 5. They do not speak
// 3.1.1 (their bodies always carry a properties length), so codec311.go
// decodes 3.1.1 client packets into the same paho types and encodes the
// server's packets from them; each rule cites its clause. splitPacket
// frames a byte stream (a packet may arrive split anywhere, byte at a
// time included: FuzzPackets), refusing a packet above the maximum size as
// soon as its length is read.
//
// # Sessions and State
//
// A session holds its subscriptions, the QoS 1 and 2 messages waiting for
// or in flight to the client (packet id = f(queue sequence), stable across
// reconnects, so a resend keeps its id and has DUP set) and the incoming
// QoS 2 packet ids awaiting PUBREL. A persistent session (3.1.1 clean
// session 0, or an MQTT 5 session expiry) keeps all of it in State, whose
// writes are durable on return, and outlives its connection until it
// expires; a clean one keeps it in memory and ends with its connection.
// MemState is State in memory; cmd/internal/app adapts store/mqttstate
// (JetStream) to it.
//
// # Headers
//
// An MQTT client's publish carries Nmqtt-Pub: <qos> (as nats-server's),
// its user properties as header fields, and Mqtt-Content-Type,
// Mqtt-Message-Expiry, Mqtt-Payload-Format, Mqtt-Response-Topic,
// Mqtt-Correlation-Data (base64) and Mqtt-Retain for the other
// properties. Deliveries turn them back into properties. A message from a
// NATS client without Nmqtt-Pub is QoS 0. A subscriber receives the lower
// of the publish's QoS and the highest QoS of its matching subscriptions,
// once per message for its plain subscriptions.
//
// # Request and response
//
// A NATS message's reply subject is an MQTT 5 subscriber's response
// topic (unless the header names one). An MQTT 5 publish with a response
// topic is published with a reply subject of the session's
// ($MQTT.RI.<token>.<n>): a reply there is sent to the requester on its
// response topic with its correlation data, so NATS responders need know
// nothing of MQTT.
//
// # Concurrency
//
// A connection has at most a read goroutine (the only reader of the
// socket; it handles the client's packets in order) and a writer (the
// only writer; it writes whatever the connection's buffer holds in one
// write), each running only while it has work. The writer of a packet
// queued while none runs is first the sender's own goroutine, with one
// non-blocking write on a plain TCP socket (write.go); what the socket
// does not take, and TLS connections' bytes, go to a writer goroutine,
// which ends once the buffer is empty. A reader that delivers (a client's
// publishes to subscribers, its own acknowledgements) and a session's
// pump (a window of QoS 1/2 messages) write later instead: they become
// the writer of each connection they queue bytes for and write each once,
// at the end of the read batch or of the window (flushList), so 16
// publishers into one subscriber make one write per batch, not one per
// message. The reader, on Linux, parks the
// connection once it has had no byte for Config.ParkAfter (park.go). A
// parked connection holds no goroutine and no buffer, keeping a
// descriptor of the socket of its own in the Server's epoll set
// (poll_linux.go, armed EPOLLONESHOT); when bytes arrive the poller
// starts a reader. A plain TCP one with no writer running lets its Go
// net.Conn go too (detach), and its reader makes one from the descriptor
// again (attach); a writer for a detached connection writes to the
// socket directly and attaches only when the socket does not take
// everything at once. A TLS one stays attached (the TLS state lives in
// its net.Conn): its reader parks only after a read timed out, when the
// TLS connection holds at most part of a record, whose rest wakes the
// poller. A sweeper (poll.go) closes parked connections past 1.5 times
// their keep alive, waking when the earliest deadline comes rather than
// on a tick; a running reader enforces it with its read deadline. On
// other systems each connection keeps its reader.
//
// An idle connection is small: its conn and session keep what few
// clients use (a will, topic aliases, queues, QoS state, timers) in
// records made on first use (connMore, sessionMore).
//
// Broker deliveries run on the publisher's goroutine and never block:
// QoS 0 is appended to the connection's buffer (a client past
// Config.MaxPending is cut off alone), QoS 1 and 2 go to the session's
// worker goroutine, started while deliveries wait for it, which writes
// them to State and sends what the in-flight window allows. A session
// makes its broker connections on its first subscription or publish.
// Lock order: Server.mu → session.mu → conn.mu → poller.mu; State is
// called without session.mu held.
package mqtt
