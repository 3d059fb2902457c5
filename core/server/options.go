package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/leafbox/leafbox/core/auth"
)

// Defaults match nats-server's so that client libraries behave the same.
const (
	DefaultPort             = 4222
	DefaultHost             = "0.0.0.0"
	DefaultMaxPayload       = 1 << 20
	DefaultMaxControlLine   = 4096
	DefaultMaxPending       = 64 << 20
	DefaultMaxConnections   = 64 * 1024
	DefaultPingInterval     = 2 * time.Minute
	DefaultMaxPingsOut      = 2
	DefaultWriteDeadline    = 10 * time.Second
	DefaultAuthTimeout      = 2 * time.Second
	DefaultTLSTimeout       = 2 * time.Second
	DefaultLameDuckDuration = 2 * time.Minute
	DefaultLameDuckGrace    = 10 * time.Second
	// RandomPort asks the operating system for a free port (Port: -1).
	RandomPort = -1
)

// Options configure a Server. The zero value of each field means its
// default; call Validate (New does) to fill defaults and reject bad values.
type Options struct {
	// ServerName is reported in INFO; it defaults to the server id.
	ServerName string
	// Host is the address to listen on; it defaults to DefaultHost.
	Host string
	// Port to listen on: 0 means DefaultPort, RandomPort picks a free one.
	Port int

	// MaxPayload bounds a message's size (headers and body).
	MaxPayload int32
	// MaxControlLine bounds a protocol line's length.
	MaxControlLine int32
	// MaxPending bounds the bytes queued for one client before it is
	// closed as a slow consumer.
	MaxPending int64
	// MaxConnections bounds the number of client connections.
	MaxConnections int
	// RefuseConnection, when set, is asked as each new client connection
	// registers; true refuses it with -ERR 'insufficient resources'. The
	// app sets it to shed new work under memory pressure.
	RefuseConnection func() bool
	// MaxSubs bounds the subscriptions of one connection; 0 is unlimited.
	MaxSubs int
	// PingInterval is how often the server pings each client.
	PingInterval time.Duration
	// MaxPingsOut is how many pings may go unanswered before the
	// connection is closed as stale.
	MaxPingsOut int
	// WriteDeadline bounds one write to a client.
	WriteDeadline time.Duration
	// AuthTimeout bounds the wait for CONNECT when auth is required.
	AuthTimeout time.Duration
	// NoHeaderSupport turns headers off in INFO (for tests of old clients).
	NoHeaderSupport bool

	// Auth configures users, tokens, nkeys, accounts and permissions. Nil
	// means no authentication.
	Auth *auth.Config

	// TLS, when set, is used for client connections.
	TLS *tls.Config
	// TLSRequired makes plaintext clients fail; TLS must be set.
	TLSRequired bool
	// TLSVerify requires and verifies client certificates (set
	// TLS.ClientAuth accordingly).
	TLSVerify bool
	// TLSHandshakeFirst performs the TLS handshake before sending INFO.
	TLSHandshakeFirst bool
	// TLSTimeout bounds the TLS handshake.
	TLSTimeout time.Duration

	// LameDuckDuration is the time over which clients are closed in lame
	// duck mode, after LameDuckGracePeriod.
	LameDuckDuration    time.Duration
	LameDuckGracePeriod time.Duration

	// JetStream reports JetStream as enabled in INFO; Domain is its domain.
	JetStream       bool
	JetStreamDomain string
	// JetStreamAPILevel is the JetStream API level INFO reports (api_lvl),
	// as nats-server does; 0 leaves it out.
	JetStreamAPILevel int

	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger

	// BuildVersion and BuildCommit are leafbox's own release version and
	// VCS commit, shown in /varz as leafbox_version and git_commit and
	// sent in INFO git_commit. The INFO and /varz "version" stays Version,
	// the nats-server level clients detect features by.
	BuildVersion, BuildCommit string
	// BuildDate is when leafbox was built (the commit's date, RFC 3339),
	// shown in /varz as build_date (a leafbox extension; omitted when "").
	BuildDate string
}

// Validate fills in defaults and rejects values that cannot work.
func (o *Options) Validate() error {
	if o.Host == "" {
		o.Host = DefaultHost
	}
	if o.Port == 0 {
		o.Port = DefaultPort
	}
	if o.Port < RandomPort || o.Port > 65535 {
		return fmt.Errorf("server: port %d out of range", o.Port)
	}
	setDefault(&o.MaxPayload, DefaultMaxPayload)
	setDefault(&o.MaxControlLine, DefaultMaxControlLine)
	setDefault(&o.MaxPending, DefaultMaxPending)
	setDefault(&o.MaxConnections, DefaultMaxConnections)
	setDefault(&o.PingInterval, DefaultPingInterval)
	setDefault(&o.MaxPingsOut, DefaultMaxPingsOut)
	setDefault(&o.WriteDeadline, DefaultWriteDeadline)
	setDefault(&o.AuthTimeout, DefaultAuthTimeout)
	setDefault(&o.TLSTimeout, DefaultTLSTimeout)
	setDefault(&o.LameDuckDuration, DefaultLameDuckDuration)
	setDefault(&o.LameDuckGracePeriod, DefaultLameDuckGrace)
	if o.MaxPayload < 0 || o.MaxControlLine < 0 || o.MaxPending < 0 || o.MaxConnections < 0 || o.MaxSubs < 0 {
		return errors.New("server: limits must not be negative")
	}
	if int64(o.MaxPayload) > o.MaxPending {
		return fmt.Errorf("server: max_payload (%d) must not exceed max_pending (%d)", o.MaxPayload, o.MaxPending)
	}
	if (o.TLSRequired || o.TLSVerify || o.TLSHandshakeFirst) && o.TLS == nil {
		return errors.New("server: tls options set without a certificate")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
