package mqtt

import "time"

// State keeps what must outlive a connection and, when durable, a restart:
// persistent sessions, each session's queue of QoS 1 and 2 messages, the
// packet ids of incoming QoS 2 messages not yet released, and retained
// messages. Every write must be durable when it returns: the listener
// acknowledges the client only after it. The listener calls it from many
// goroutines; implementations must be safe for concurrent use. Slices
// passed in are the callee's to keep only as copies; slices returned are
// the caller's.
type State interface {
	// LoadSessions returns every stored session.
	LoadSessions() ([]Session, error)
	// PutSession stores s, replacing the session of the same client id.
	PutSession(s Session) error
	// DeleteSession removes a session with its queue and its incoming
	// QoS 2 packet ids; removing a missing session is not an error.
	DeleteSession(clientID string) error

	// Enqueue appends m to the client's queue and returns its sequence
	// number (increasing, never 0).
	Enqueue(clientID string, m Msg) (seq uint64, err error)
	// Queue returns up to max (0: all) unreleased messages of the client
	// with sequence numbers above afterSeq, in order.
	Queue(clientID string, afterSeq uint64, max int) ([]QueuedMsg, error)
	// Release removes a message from the queue (PUBACK, PUBCOMP, or a
	// QoS 1 message dropped).
	Release(clientID string, seq uint64) error
	// MarkPubrec records that the client acknowledged a QoS 2 message with
	// PUBREC: on resumption the server sends PUBREL, not the message.
	MarkPubrec(clientID string, seq uint64) error

	// AddIncomingQoS2 records that a QoS 2 message with packet id pid
	// from the client was delivered and awaits PUBREL.
	AddIncomingQoS2(clientID string, pid uint16) error
	// ReleaseIncomingQoS2 forgets pid (PUBREL received).
	ReleaseIncomingQoS2(clientID string, pid uint16) error
	// IncomingQoS2 returns the client's recorded packet ids.
	IncomingQoS2(clientID string) ([]uint16, error)

	// SetRetained stores m as the retained message of topic; an empty
	// payload removes it.
	SetRetained(topic string, m Msg) error
	// Retained returns the retained messages whose topics match the MQTT
	// topic filter (wildcards '+' and '#').
	Retained(filter string) ([]Msg, error)
}

// Session is a persistent MQTT session as State stores it.
type Session struct {
	ClientID string
	// Version is the protocol level of the client's last CONNECT (4 or 5).
	Version byte
	// ExpiryInterval is the session expiry in seconds after disconnect;
	// 0xFFFFFFFF never expires. A 3.1.1 session with clean session false
	// never expires.
	ExpiryInterval uint32
	Subs           []Sub
	// DisconnectedAt is when the client went away; zero while connected.
	DisconnectedAt time.Time
	// Account is the account the session's client authenticated into.
	Account string
	// User is the user the client authenticated as.
	User string
}

// Sub is one subscription of a session.
type Sub struct {
	// Filter is the topic filter without any $share prefix.
	Filter            string
	QoS               byte
	NoLocal           bool
	RetainAsPublished bool
	RetainHandling    byte
	// SubID is the MQTT 5 subscription identifier, 0 if none.
	SubID int
	// Share is the shared subscription group, "" if not shared.
	Share string
}

// Msg is a message as State keeps it.
type Msg struct {
	Topic   string
	Payload []byte
	// Header holds the MQTT 5 properties as a NATS header block (the
	// fields listed in the package documentation), nil when none.
	Header []byte
	QoS    byte
	Retain bool
	// Time is when the server received the message; message expiry
	// counts from it.
	Time time.Time
}

// QueuedMsg is a message in a session's queue.
type QueuedMsg struct {
	Seq uint64
	Msg
	// Pubrec is set once the client sent PUBREC for it (QoS 2).
	Pubrec bool
}
