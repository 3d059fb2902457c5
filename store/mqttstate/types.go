package mqttstate

import (
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/memstore"
	"github.com/leafbox/leafbox/store/vfs"
)

// Errors callers branch on with errors.Is.
var (
	// ErrClosed means the Store was closed.
	ErrClosed = errors.New("mqttstate: closed")
	// ErrUnknownSession means no session is stored for the client id.
	ErrUnknownSession = errors.New("mqttstate: no such session")
	// ErrUnknownMessage means the client's queue holds no message with
	// that sequence (it was released, or never queued for the client).
	ErrUnknownMessage = errors.New("mqttstate: no such queued message")
	// ErrMaxSessions means Options.MaxSessions sessions are stored.
	ErrMaxSessions = errors.New("mqttstate: maximum sessions reached")
	// ErrQueueFull means the session's queue holds Options.MaxQueued
	// messages.
	ErrQueueFull = errors.New("mqttstate: session queue full")
	// ErrMaxRetained means Options.MaxRetained retained messages are
	// stored.
	ErrMaxRetained = errors.New("mqttstate: maximum retained messages reached")
	// ErrMaxRetainedBytes means the retained message would take the
	// retained bytes over Options.MaxRetainedBytes.
	ErrMaxRetainedBytes = errors.New("mqttstate: maximum retained bytes reached")
	// ErrInvalidTopic means a topic name is empty, too long, not UTF-8 or
	// holds a wildcard or NUL.
	ErrInvalidTopic = errors.New("mqttstate: invalid topic name")
	// ErrInvalidFilter means a topic filter is malformed.
	ErrInvalidFilter = errors.New("mqttstate: invalid topic filter")
	// ErrInvalidClientID means a client id is not valid UTF-8 or is over
	// 65535 bytes.
	ErrInvalidClientID = errors.New("mqttstate: invalid client id")
	// ErrInvalidQoS means a message's QoS is above 2.
	ErrInvalidQoS = errors.New("mqttstate: QoS above 2")
	// ErrCorrupt marks a stored record that does not decode.
	ErrCorrupt = errors.New("mqttstate: corrupt record")
)

// NeverExpire as a Session's ExpiryInterval keeps the session until it is
// deleted (MQTT 5's 0xFFFFFFFF; use it for 3.1.1's clean session false).
const NeverExpire = ^uint32(0)

// Sub is one subscription of a session.
type Sub struct {
	// Filter is the MQTT topic filter, without a $share prefix.
	Filter string
	// QoS is the maximum QoS granted.
	QoS byte
	// NoLocal, RetainAsPublished and RetainHandling are MQTT 5's
	// subscription options.
	NoLocal, RetainAsPublished bool
	RetainHandling             byte
	// SubID is the MQTT 5 subscription identifier, 0 for none.
	SubID uint32
	// Share is the shared subscription's group name, "" for none.
	Share string
}

// Session is a persistent MQTT session as stored.
type Session struct {
	ClientID string
	// Version is the protocol level of the CONNECT (4 for 3.1.1, 5).
	Version byte
	// ExpiryInterval is the session expiry in seconds after
	// DisconnectedAt; NeverExpire keeps the session forever, 0 ends it at
	// the disconnect.
	ExpiryInterval uint32
	Subs           []Sub
	// DisconnectedAt is when the client disconnected; zero while it is
	// connected (a connected session never expires). Open stamps the
	// sessions that were connected when the process died with the time of
	// the Open, which deletes those with ExpiryInterval 0.
	DisconnectedAt time.Time
	// Account and User are who the client authenticated as, for the
	// listener to check on resumption; the store keeps them as given.
	Account, User string
}

// expired reports whether the session has expired at now.
func (s *Session) expired(now time.Time) bool {
	if s.DisconnectedAt.IsZero() || s.ExpiryInterval == NeverExpire {
		return false
	}
	return !now.Before(s.DisconnectedAt.Add(time.Duration(s.ExpiryInterval) * time.Second))
}

// Msg is an application message kept in a queue or as retained.
type Msg struct {
	Topic  string
	QoS    byte
	Retain bool
	// Header holds opaque bytes, stored and returned verbatim: core/mqtt
	// keeps the MQTT 5 PUBLISH properties there as a NATS header block
	// (nil when none); the store never parses it.
	Header  []byte
	Payload []byte
	// Time is when the server received the message (message expiry
	// counts from it); stored as given, zero allowed.
	Time time.Time
	// Expiry is when the message expires (MQTT 5 message expiry); zero
	// never. An expired retained message is gone; an expired queued
	// message that has no packet id yet is skipped by Queue and dropped
	// by Sweep.
	Expiry time.Time
}

// expired reports whether the message has expired at now.
func (m *Msg) expired(now time.Time) bool {
	return !m.Expiry.IsZero() && !now.Before(m.Expiry)
}

// QueuedMsg is a message in a session's queue with its delivery state.
type QueuedMsg struct {
	// Seq identifies the message in the queue; sequences grow in
	// Enqueue order.
	Seq uint64
	Msg
	// PacketID is the packet id assigned by AssignPacketID, 0 for none.
	PacketID uint16
	// Pubrec means QoS 2: PUBREC received, PUBREL owed.
	Pubrec bool
	// Deliveries counts the AssignPacketID calls for this message.
	Deliveries int
}

// Backend opens the streams a Store lives in. *jetstream.Engine is one
// (its streams are hidden from the JetStream API); Memory and Files serve
// tests and tools.
type Backend interface {
	// OpenInternalStream opens, creating when absent, the named stream.
	// Store, Remove and Purge must be durable on return at the backend's
	// sync setting.
	OpenInternalStream(name string, cfg store.Config) (store.Stream, error)
}

// Memory is a Backend of memory streams: nothing survives Close.
type Memory struct{}

// OpenInternalStream returns a new, empty memory stream.
func (Memory) OpenInternalStream(name string, cfg store.Config) (store.Stream, error) {
	cfg.Name = name
	return memstore.New(cfg)
}

// Files is a Backend of file streams in Dir/<name>/msgs on FS (vfs.OS when
// nil), the layout the JetStream engine uses for its internal streams.
type Files struct {
	FS  vfs.FS
	Dir string
	// SyncInterval 0 makes every write durable on return (group
	// commit); a positive interval bounds the loss window of a power cut.
	SyncInterval time.Duration
}

// OpenInternalStream opens the named file stream.
func (f Files) OpenInternalStream(name string, cfg store.Config) (store.Stream, error) {
	fsys := f.FS
	if fsys == nil {
		fsys = vfs.OS
	}
	cfg.Name = name
	return filestore.Open(fsys, filepath.Join(f.Dir, name, "msgs"), filestore.Config{Config: cfg, SyncInterval: f.SyncInterval})
}

// Options configures Open. Zero limits are unlimited. Open each account
// once per backend: two Stores over the same streams corrupt each other.
type Options struct {
	// Backend holds the streams; required.
	Backend Backend
	// Account names the account whose state this is; its streams are
	// mqtt.<account>.{sess,msgs,out,qos2in,rmsgs}. "" is "$G".
	Account string
	// MaxSessions bounds the stored sessions.
	MaxSessions int
	// MaxQueued bounds the messages queued per session.
	MaxQueued int
	// MaxRetained and MaxRetainedBytes bound the retained messages (bytes
	// count topic, header and payload).
	MaxRetained      int
	MaxRetainedBytes int64
	// SweepInterval is how often expired sessions, retained messages and
	// queued messages are purged in the background; 0 is one minute,
	// negative disables the sweep (call Sweep).
	SweepInterval time.Duration
	// Logger receives warnings (undecodable records); nil discards them.
	Logger *slog.Logger
}
