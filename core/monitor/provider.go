package monitor

import (
	"io"
	"time"
)

// Provider is what the monitor needs from the server. It supplies raw
// snapshots; the monitor filters, sorts, pages and shapes them into the
// nats-server JSON documents. Every method must be safe for concurrent use
// and must not block on network I/O. The monitor only reads what a method
// returns, so a provider may hand out data it shares between calls (a
// closed connection's stored snapshot, say), but must not modify anything
// after returning it.
type Provider interface {
	// ServerID returns the server's unique id, reported as server_id.
	ServerID() string

	// Varz returns a snapshot of the server's identity, configuration
	// and counters. In its response the monitor sets Now, Uptime (from
	// Start) and HTTPReqStats, and fills the process fields (go, cores,
	// gomaxprocs, gomemlimit, mem, cpu) that are left zero.
	Varz() *Varz

	// Connections returns snapshots of the client and leafnode
	// connections in state: the open ones, the server's bounded history
	// of recently closed ones, or both. A snapshot is closed exactly when
	// its Stop is set. When subs is false, Subs may be left nil; NumSubs
	// is always set.
	Connections(state ConnState, subs bool) []ConnSnapshot

	// Subscriptions returns snapshots of the subscriptions of account, or
	// of every account when account is "". Each has Account and Cid set.
	Subscriptions(account string) []SubDetail

	// SublistStats returns the matching statistics of account's
	// subscription index, or their sum over every account when account
	// is "".
	SublistStats(account string) SublistStats

	// Accounts returns the names of the server's accounts.
	Accounts() []string

	// Ready returns nil once the server accepts client connections and
	// an error saying why not otherwise (starting, shutting down).
	Ready() error
}

// JetStreamProvider is implemented by a Provider whose server runs
// JetStream. Without it /jsz reports JetStream as disabled.
type JetStreamProvider interface {
	// Jsz returns the JetStream report selected by opts. The monitor has
	// already applied the defaults described on JszOptions; it sets
	// server_id and now itself. An error is answered with 400 and its
	// text.
	Jsz(opts JszOptions) (*Jsz, error)
}

// LeafProvider is implemented by a Provider whose server has leafnode
// connections. Without it /leafz reports none.
type LeafProvider interface {
	// Leafs returns snapshots of the current leafnode connections, with
	// Subs filled when subs is true. The monitor filters by account.
	Leafs(subs bool) []LeafInfo
}

// UplinkProvider is implemented by a Provider whose server forwards
// captured subjects to a hub through store-and-forward uplinks. Without it
// /uplinkz reports none.
type UplinkProvider interface {
	// Uplinks returns a snapshot of every uplink, in configuration order.
	Uplinks() []UplinkInfo
}

// HealthChecker is implemented by a Provider with subsystems whose health
// /healthz must report beyond readiness, such as JetStream.
type HealthChecker interface {
	// CheckHealth runs the checks opts selects (see HealthzOptions) and
	// returns the problems found, in order of importance, with the HTTP
	// status they warrant (0 means 503 Service Unavailable). No problems
	// means healthy. A server configured for JetStream that is not running
	// it reports one HealthzErrorJetStream problem with the text
	// JetStreamNotEnabled.
	CheckHealth(opts HealthzOptions) (status int, problems []HealthzError)
}

// DegradationChecker is implemented by a Provider with conditions worth
// reporting that do not make the server unhealthy by default, such as an
// uplink whose link has been down for long. /healthz lists them under
// degraded with status 200, or fails with 503 when the query has
// uplinks=true or CheckDegraded says they are always fatal. js-enabled-only
// and js-server-only skip them.
type DegradationChecker interface {
	// CheckDegraded returns the conditions found, in order of
	// importance, and whether they are fatal whatever the query says (a
	// configuration option).
	CheckDegraded(opts HealthzOptions) (degraded []HealthzError, fatal bool)
}

// MetricsSource is implemented by a Provider with metrics beyond those the
// monitor derives from Varz; a composition root can add collectors by
// wrapping its Provider in a type that also implements MetricsSource. The
// output is appended to /metrics and must be in the Prometheus text
// exposition format; NewMetricWriter helps produce it.
type MetricsSource interface {
	// WriteMetrics writes metric families to w. Family names must not
	// repeat the monitor's own.
	WriteMetrics(w io.Writer)
}

// ConnState selects connections by state in /connz.
type ConnState int

// The connection states /connz can select with its state parameter.
const (
	// ConnOpen selects open connections (state=open, the default).
	ConnOpen ConnState = iota
	// ConnClosed selects recently closed connections (state=closed).
	ConnClosed
	// ConnAll selects both (state=any or state=all).
	ConnAll
)

// String returns the state's query-parameter spelling.
func (s ConnState) String() string {
	switch s {
	case ConnOpen:
		return "open"
	case ConnClosed:
		return "closed"
	case ConnAll:
		return "any"
	}
	return "unknown"
}

// ConnSnapshot is the provider's view of one connection, taken at one
// instant. The monitor turns it into a ConnInfo.
type ConnSnapshot struct {
	Cid          uint64        // Cid is the connection id.
	Kind         string        // Kind is "Client" (the default when empty) or "Leafnode".
	Type         string        // Type is "nats" (the default for clients when empty), "websocket", ...
	IP           string        // IP is the peer's address.
	Port         int           // Port is the peer's port.
	Start        time.Time     // Start is when the connection was accepted.
	LastActivity time.Time     // LastActivity is when the connection last sent or received a message.
	Stop         time.Time     // Stop is when the connection closed; zero while open.
	Reason       string        // Reason says why a closed connection closed ("Client Closed", ...).
	RTT          time.Duration // RTT is the last measured round-trip time; zero if unknown.
	Pending      int           // Pending is the number of bytes queued for the peer.
	InMsgs       int64         // InMsgs counts messages received from the peer.
	OutMsgs      int64         // OutMsgs counts messages sent to the peer.
	InBytes      int64         // InBytes counts payload bytes received from the peer.
	OutBytes     int64         // OutBytes counts payload bytes sent to the peer.
	Stalls       int64         // Stalls counts how often the producer was stalled for this connection.
	NumSubs      int           // NumSubs is the number of subscriptions.
	Name         string        // Name is the client's name from CONNECT.
	Lang         string        // Lang is the client library's language from CONNECT.
	Version      string        // Version is the client library's version from CONNECT.
	TLSVersion   string        // TLSVersion is the negotiated TLS version ("1.3"); empty without TLS.
	TLSCipher    string        // TLSCipher is the negotiated cipher suite's name.
	TLSFirst     bool          // TLSFirst reports a TLS handshake before INFO.
	TLSPeerCerts []TLSPeerCert // TLSPeerCerts describes the verified client certificates.
	User         string        // User is the authenticated user name or nkey; it is reported only with auth=true.
	Account      string        // Account is the account name; it is reported only with auth=true.
	Subs         []SubDetail   // Subs lists the subscriptions; may be nil unless requested.
}
