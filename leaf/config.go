package leaf

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/subject"
)

// Defaults applied by Config.Validate to zero fields.
const (
	// DefaultReconnectMin is the first reconnect delay (nats-server's
	// leafnode reconnect interval).
	DefaultReconnectMin = time.Second
	// DefaultReconnectMax caps the exponential reconnect backoff.
	DefaultReconnectMax = 30 * time.Second
	// DefaultReconnectJitter is the fraction of each delay that is
	// randomised, so a fleet of gateways does not reconnect in lockstep.
	DefaultReconnectJitter = 0.5
	// DefaultPingInterval is how often the link sends PING to the hub.
	DefaultPingInterval = 30 * time.Second
	// DefaultMaxPingsOut is how many PINGs may go unanswered before the
	// link is closed as stale.
	DefaultMaxPingsOut = 2
	// DefaultDialTimeout bounds the TCP dial.
	DefaultDialTimeout = 5 * time.Second
	// DefaultHandshakeTimeout bounds each handshake step: the hub's first
	// INFO, the TLS handshake, and the hub's answer to CONNECT.
	DefaultHandshakeTimeout = 2 * time.Second
	// DefaultWriteDeadline bounds one write to the hub.
	DefaultWriteDeadline = 10 * time.Second
	// DefaultMaxPending bounds the bytes queued for the hub but not yet
	// written; past it the link is closed as a slow consumer.
	DefaultMaxPending = 64 << 20
	// DefaultVersion is the version announced in CONNECT. A hub compares
	// it with its leafnodes.min_version.
	DefaultVersion = "2.11.0"
	// DefaultPort is the leafnode port used when a URL has none.
	DefaultPort = "7422"
)

// Config configures one solicited leafnode link: the remote hub (one or
// more URLs of the same hub cluster), how to authenticate, and the local
// account the link is bound to. The zero value of every optional field
// selects a default; Validate fills them in.
type Config struct {
	// URLs are the hub's leafnode URLs, tried in order with failover
	// (schemes nats-leaf, nats, tls; no path). User info in a URL is sent
	// as user/password, or as a token when there is no password. URLs the
	// hub announces in leafnode_urls are added while the link runs.
	URLs []string

	// Account is the local account bound to the link ("" is the global
	// account $G). It is sent to the hub as remote_account.
	Account string

	// Credentials is the path of a .creds file (user JWT and user NKey
	// seed). The hub's nonce is signed with the seed. It is read again on
	// every connect, so the file can be rotated.
	Credentials string
	// NkeySeedFile is the path of a file holding a user NKey seed (SU…);
	// the public key and the signed nonce are sent. Credentials, when
	// set, takes precedence, as in nats-server.
	NkeySeedFile string

	// TLS, when set, makes the link use TLS even if the hub does not
	// require it. A tls:// URL or a hub INFO with tls_required turns TLS
	// on with a default configuration. ServerName defaults to the host of
	// the configured URL.
	TLS *tls.Config

	// Compression is the S2 compression mode: off, accept, s2_auto,
	// s2_uncompressed, s2_fast, s2_better or s2_best (aliases: on,
	// enabled, true, auto → s2_auto; disabled, false → off; fast,
	// better, best, uncompressed). "" is s2_auto, nats-server's default.
	Compression string
	// RTTThresholds are the s2_auto thresholds: an RTT up to the first
	// selects s2_uncompressed, up to the second s2_fast, up to the third
	// s2_better, beyond them s2_best. nil selects 10ms, 50ms, 100ms.
	RTTThresholds []time.Duration

	// DenyImports lists subjects the link does not subscribe to on the
	// hub (also sent as deny_pub, so the hub does not send them).
	DenyImports []string
	// DenyExports lists subjects the link never sends to the hub.
	DenyExports []string

	// Name identifies this gateway to the hub (CONNECT name). It must be
	// stable and unique per gateway: the hub evicts an older link with the
	// same name. "" uses ServerID.
	Name string
	// ServerID is the local server's id (CONNECT server_id). It also
	// seeds the loop-detection subject, so give every link of one server
	// the server's own id. "" generates a random id.
	ServerID string
	// Domain is the local JetStream domain sent in CONNECT; it must differ
	// from the hub's.
	Domain string
	// JetStream tells the hub that JetStream is enabled for Account.
	JetStream bool
	// Version is announced in CONNECT; "" is DefaultVersion.
	Version string

	// ReconnectMin and ReconnectMax bound the exponential reconnect
	// backoff; ReconnectJitter (0..1) is the randomised fraction of each
	// delay.
	ReconnectMin    time.Duration
	ReconnectMax    time.Duration
	ReconnectJitter float64

	// PingInterval is how often PING is sent; after MaxPingsOut
	// unanswered PINGs the link is closed as stale.
	PingInterval time.Duration
	MaxPingsOut  int

	// DialTimeout bounds the TCP dial; HandshakeTimeout each handshake
	// step; WriteDeadline each write.
	DialTimeout      time.Duration
	HandshakeTimeout time.Duration
	WriteDeadline    time.Duration

	// MaxPending bounds the bytes waiting to be written to the hub. A
	// link that falls further behind is closed as a slow consumer, the
	// policy a client connection gets: what was queued is dropped and the
	// link reconnects.
	MaxPending int

	// Dial opens the TCP connection. nil uses net.Dialer. Tests use it to
	// count socket bytes or to run over in-memory pipes.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// Compression modes, as nats-server names them.
const (
	CompressionOff            = "off"
	CompressionAccept         = "accept"
	CompressionS2Auto         = "s2_auto"
	CompressionS2Uncompressed = "s2_uncompressed"
	CompressionS2Fast         = "s2_fast"
	CompressionS2Better       = "s2_better"
	CompressionS2Best         = "s2_best"
	// compressionNotSupported is what a link reports when the hub's INFO
	// had no compression field (an old hub).
	compressionNotSupported = "not supported"
)

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("leaf: invalid config")

// Validate checks c and fills in defaults for zero fields. It reads no
// files; New does that.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	if len(c.URLs) == 0 {
		return bad("no remote URL")
	}
	for _, raw := range c.URLs {
		if _, err := parseRemoteURL(raw); err != nil {
			return bad("%v", err)
		}
	}
	var err error
	if c.Compression, c.RTTThresholds, err = compressionSettings(c.Compression, c.RTTThresholds); err != nil {
		return bad("%v", err)
	}
	for _, list := range [][]string{c.DenyImports, c.DenyExports} {
		for _, s := range list {
			if !subject.Valid(s) {
				return bad("invalid deny subject %q", s)
			}
		}
	}
	if c.Name != "" && strings.ContainsAny(c.Name, " \t\r\n") {
		return bad("name %q contains blanks", c.Name)
	}
	setIdentityDefaults(&c.ServerID, &c.Name, &c.Version)
	setDefault(&c.ReconnectMin, DefaultReconnectMin)
	setDefault(&c.ReconnectMax, DefaultReconnectMax)
	if c.ReconnectMax < c.ReconnectMin {
		return bad("reconnect max %v below min %v", c.ReconnectMax, c.ReconnectMin)
	}
	if c.ReconnectJitter == 0 {
		c.ReconnectJitter = DefaultReconnectJitter
	}
	if c.ReconnectJitter < 0 || c.ReconnectJitter > 1 {
		return bad("reconnect jitter %v outside 0..1", c.ReconnectJitter)
	}
	setDefault(&c.PingInterval, DefaultPingInterval)
	if c.MaxPingsOut <= 0 {
		c.MaxPingsOut = DefaultMaxPingsOut
	}
	setDefault(&c.DialTimeout, DefaultDialTimeout)
	setDefault(&c.HandshakeTimeout, DefaultHandshakeTimeout)
	setDefault(&c.WriteDeadline, DefaultWriteDeadline)
	if c.MaxPending <= 0 {
		c.MaxPending = DefaultMaxPending
	}
	return nil
}

// defaultRTTThresholds are nats-server's s2_auto RTT thresholds.
var defaultRTTThresholds = []time.Duration{10 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond}

// compressionSettings checks a configured compression mode and s2_auto
// thresholds (the same rules on both sides), and returns the canonical
// mode and the thresholds, nil selecting the defaults.
func compressionSettings(mode string, ts []time.Duration) (string, []time.Duration, error) {
	mode, err := NormalizeCompression(mode)
	if err != nil {
		return "", nil, err
	}
	if ts == nil {
		return mode, slices.Clone(defaultRTTThresholds), nil
	}
	for i, d := range ts {
		if d < 0 || (i > 0 && d != 0 && d < ts[i-1]) {
			return "", nil, errors.New("rtt thresholds must be non-negative and increasing")
		}
	}
	return mode, ts, nil
}

// setIdentityDefaults fills in how a server presents itself when not
// configured: a generated id, the id as name, DefaultVersion.
func setIdentityDefaults(serverID, name, version *string) {
	if *serverID == "" {
		*serverID = newID()
	}
	if *name == "" {
		*name = *serverID
	}
	if *version == "" {
		*version = DefaultVersion
	}
}

// connSettings returns the connection policy of the link's sessions.
func (c *Config) connSettings(slowConsumers *atomic.Uint64) connSettings {
	return newConnSettings(c.PingInterval, c.MaxPingsOut, c.WriteDeadline, c.MaxPending, c.Compression, c.RTTThresholds, slowConsumers, "hub")
}

// setDefault sets *d to def when it is zero or negative.
func setDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// remote is one parsed hub URL.
type remote struct {
	url *url.URL // scheme, host:port and user info
	tls bool     // the scheme asks for TLS
	// tlsName is the host name to verify, taken from the configured URL
	// also for URLs learned from the hub (which are often addresses).
	tlsName string
}

// redacted returns the URL without its password, for logs and Status.
func (r remote) redacted() string { return r.url.Redacted() }

// address returns host:port for dialing.
func (r remote) address() string { return r.url.Host }

// parseRemoteURL parses a configured hub URL. A missing port is
// DefaultPort.
func parseRemoteURL(raw string) (remote, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return remote{}, fmt.Errorf("url %q: %v", raw, err)
	}
	var useTLS bool
	switch strings.ToLower(u.Scheme) {
	case "nats-leaf", "nats", "leafnode":
	case "tls":
		useTLS = true
	case "ws", "wss":
		return remote{}, fmt.Errorf("url %q: websocket leafnodes are not supported yet", raw)
	default:
		return remote{}, fmt.Errorf("url %q: scheme must be nats-leaf, nats or tls", raw)
	}
	if u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return remote{}, fmt.Errorf("url %q: want scheme://[user[:pass]@]host[:port]", raw)
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), DefaultPort)
	}
	u.Path = ""
	return remote{url: u, tls: useTLS, tlsName: u.Hostname()}, nil
}

// learnedRemote builds a remote for a leafnode URL the hub announced
// ("host:port"), with the scheme, credentials and TLS name of template.
func learnedRemote(hostport string, template remote) (remote, bool) {
	if i := strings.Index(hostport, "://"); i >= 0 {
		hostport = hostport[i+3:]
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || host == "" || port == "" {
		return remote{}, false
	}
	u := *template.url
	u.Host = net.JoinHostPort(host, port)
	return remote{url: &u, tls: template.tls, tlsName: template.tlsName}, true
}

// NormalizeCompression maps a configured compression mode, or one of its
// aliases (on, auto, fast, better, best, uncompressed, off, disabled,
// any case), to its canonical name; "" is CompressionS2Auto. It is the one
// place that knows the aliases: the links, the listener and configuration
// checks all use it.
func NormalizeCompression(mode string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "", "on", "enabled", "true", "auto", CompressionS2Auto:
		return CompressionS2Auto, nil
	case "off", "disabled", "false":
		return CompressionOff, nil
	case CompressionAccept:
		return CompressionAccept, nil
	case "uncompressed", CompressionS2Uncompressed:
		return CompressionS2Uncompressed, nil
	case "fast", CompressionS2Fast:
		return CompressionS2Fast, nil
	case "better", CompressionS2Better:
		return CompressionS2Better, nil
	case "best", CompressionS2Best:
		return CompressionS2Best, nil
	}
	return "", fmt.Errorf("unknown compression mode %q", mode)
}
