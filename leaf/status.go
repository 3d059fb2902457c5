package leaf

import (
	"errors"
	"strings"
	"time"
)

// State is where a Link is in its life.
type State int

// Link states.
const (
	// StateIdle is a Link that was not started.
	StateIdle State = iota
	// StateConnecting is a Link dialing or handshaking with a hub, or
	// waiting to retry.
	StateConnecting
	// StateConnected is a Link registered with a hub: interest and
	// messages flow.
	StateConnected
	// StateClosed is a Link that was closed.
	StateClosed
)

// String returns the state's name in lower case.
func (s State) String() string {
	switch s {
	case StateIdle:
		return "idle"
	case StateConnecting:
		return "connecting"
	case StateConnected:
		return "connected"
	case StateClosed:
		return "closed"
	}
	return "unknown"
}

// Status is a snapshot of a Link, for /leafz and `leafbox uplink status`.
// Counters and connection facts describe the current hub connection and
// are zero while disconnected.
type Status struct {
	State State
	// StateSince is when the link entered State (zero while idle): for a
	// link that is not connected, since when it has been down.
	StateSince time.Time
	// URL is the hub URL of the current connection, without password.
	URL string
	// RemoteAddr is the hub's address (ip:port) on the current connection.
	RemoteAddr string
	// ServerID and ServerName identify the hub server.
	ServerID   string
	ServerName string
	// Account is the local account bound to the link; RemoteAccount the
	// hub account the link is bound to there.
	Account       string
	RemoteAccount string
	// RTT is the last measured PING round trip.
	RTT time.Duration
	// InMsgs and InBytes count messages (and their header and payload
	// bytes) received from the hub; OutMsgs and OutBytes those sent.
	InMsgs, InBytes   int64
	OutMsgs, OutBytes int64
	// Subscriptions is the number of interest entries (LS+) the hub holds
	// on the link; LocalInterest the number of local keys the link
	// announces while connected.
	Subscriptions int
	LocalInterest int
	// Compression is the negotiated mode: the S2 level in use, "off", or
	// "not supported" for a hub without compression.
	Compression string
	// ConnectedSince is when the current connection was registered.
	ConnectedSince time.Time
	// Connects counts registrations with a hub since Start.
	Connects uint64
	// SlowConsumers counts connections closed because the hub did not
	// read fast enough.
	SlowConsumers uint64
	// WireIn and WireOut count the bytes that crossed the link's sockets
	// from and to the hub, every connection since Start: after
	// compression and TLS, as a metered uplink bills them. Unlike the
	// other counters they survive reconnects.
	WireIn, WireOut int64
	// LastError is the last connection error, and LastErrorAt its time.
	LastError   string
	LastErrorAt time.Time
	// RetryAt is when the next connect attempt starts, while the link
	// waits to reconnect.
	RetryAt time.Time
}

// Errors a Link reports in Status.LastError or returns from its methods.
var (
	// ErrNotConnected is returned by Flush while no hub connection is
	// registered.
	ErrNotConnected = errors.New("leaf: not connected")
	// ErrClosed is returned after Close.
	ErrClosed = errors.New("leaf: link closed")
	// ErrWrongPort means the remote's first INFO is not a leafnode INFO.
	ErrWrongPort = errors.New("leaf: remote is not a leafnode port")
	// ErrStaleConnection means the hub stopped answering PINGs.
	ErrStaleConnection = errors.New("leaf: stale connection")
	// ErrSlowConsumer means more than MaxPending bytes waited for the hub.
	ErrSlowConsumer = errors.New("leaf: slow consumer")
	// ErrLoopDetected means the hub sent back our own loop-detection
	// subject: the link is part of a loop.
	ErrLoopDetected = errors.New("leaf: loop detected")
	// ErrProtocol means the hub sent something the protocol does not
	// allow at that point.
	ErrProtocol = errors.New("leaf: protocol violation")
)

// HubError is an -ERR the hub sent.
type HubError struct {
	Text string // the error text without quotes
}

func (e *HubError) Error() string { return "leaf: hub error: " + e.Text }

// Authorization reports whether the hub refused the credentials.
func (e *HubError) Authorization() bool {
	return strings.Contains(strings.ToLower(e.Text), "authorization violation") ||
		strings.Contains(strings.ToLower(e.Text), "authentication")
}

// Reconnect delays nats-server applies after specific hub errors
// (leafnode.go): a loop, a cluster name clash and a version below the hub's
// min_version.
const (
	loopDelay       = 30 * time.Second
	sameClusterText = "remote leafnode has same cluster name"
	minVersionText  = "connection rejected since minimum version required is"
	minVersionDelay = 5 * time.Second
	loopText        = "Loop detected"
)

// errorDelay returns the reconnect delay an -ERR text asks for, or 0.
func errorDelay(text string) time.Duration {
	switch {
	case strings.Contains(text, loopText), strings.Contains(text, sameClusterText):
		return loopDelay
	case strings.Contains(text, minVersionText):
		return minVersionDelay
	}
	return 0
}
