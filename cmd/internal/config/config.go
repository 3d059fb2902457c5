package config

import (
	_ "embed"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/leafbox/leafbox/leaf/identity"
)

// Config is leafbox's configuration file. Keys are named like nats-server's
// options. The zero value is valid and means every default; SetDefaults
// writes the defaults in, so that printing a Config shows effective values.
type Config struct {
	// Listen is the client listener's address: "host:port", "host" or a
	// port. A port given here is moved to Port when the file is parsed.
	Listen HostPort `yaml:"listen,omitempty"`
	// Port is the client port: 0 means 4222, -1 picks a free port.
	Port int `yaml:"port,omitempty"`
	// HTTP is the monitoring address, "host:port" or "host"; the host
	// defaults to 127.0.0.1. A port given here is moved to HTTPPort.
	HTTP HostPort `yaml:"http,omitempty"`
	// HTTPPort is the monitoring port: unset means 8222, 0 turns monitoring
	// off, -1 picks a free port.
	HTTPPort *int `yaml:"http_port,omitempty"`
	// ServerName is reported in INFO and in monitoring, and prefixes the
	// uplinks' Nats-Msg-Id. Unset, it is derived from the gateway's
	// identity (ApplyIdentity), else it is the random server id.
	ServerName string `yaml:"server_name,omitempty"`

	// MaxPayload bounds a message's size, headers included (default 1MiB).
	MaxPayload Size `yaml:"max_payload,omitempty"`
	// MaxPending bounds the bytes queued for one client (default 64MiB).
	MaxPending Size `yaml:"max_pending,omitempty"`
	// MaxControlLine bounds a protocol line's length (default 4KiB).
	MaxControlLine Size `yaml:"max_control_line,omitempty"`
	// MaxConnections bounds the number of client connections.
	MaxConnections int `yaml:"max_connections,omitempty"`
	// MaxSubscriptions bounds the subscriptions of one connection; 0 is
	// unlimited.
	MaxSubscriptions int `yaml:"max_subscriptions,omitempty"`
	// PingInterval is how often the server pings each client (default 2m).
	PingInterval Duration `yaml:"ping_interval,omitempty"`
	// PingMax is how many pings may go unanswered (default 2).
	PingMax int `yaml:"ping_max,omitempty"`
	// WriteDeadline bounds one write to a client (default 10s).
	WriteDeadline Duration `yaml:"write_deadline,omitempty"`

	// Authorization configures the credentials of the global account.
	Authorization *AuthorizationConfig `yaml:"authorization,omitempty"`
	// NoAuthUser names a user that connections without credentials are
	// bound to.
	NoAuthUser string `yaml:"no_auth_user,omitempty"`
	// Accounts maps account names to their users; subjects are isolated
	// between accounts.
	Accounts map[string]AccountConfig `yaml:"accounts,omitempty"`
	// TLS turns on TLS for client connections.
	TLS *TLSConfig `yaml:"tls,omitempty"`

	// LameDuckDuration is the time over which clients are closed in lame
	// duck mode (default 2m).
	LameDuckDuration Duration `yaml:"lame_duck_duration,omitempty"`
	// LameDuckGracePeriod is the wait before lame duck mode starts closing
	// clients (default 10s).
	LameDuckGracePeriod Duration `yaml:"lame_duck_grace_period,omitempty"`

	// JetStream configures the JetStream engine and its store.
	JetStream *JetStreamConfig `yaml:"jetstream,omitempty"`
	// LeafNodes configures the links to nats-server hubs.
	LeafNodes *LeafNodesConfig `yaml:"leafnodes,omitempty"`
	// Uplinks are store-and-forward flows toward a hub JetStream stream
	// over the first leafnode remote.
	Uplinks []UplinkConfig `yaml:"uplinks,omitempty"`
	// UplinkLimits caps all uplinks together.
	UplinkLimits *UplinkLimitsConfig `yaml:"uplink_limits,omitempty"`
	// Downlinks are durable consumers on hub JetStream streams that
	// deliver into local subjects over the first leafnode remote.
	Downlinks []DownlinkConfig `yaml:"downlinks,omitempty"`
	// Healthz sets when /healthz reports uplinks and downlinks as
	// degraded, and whether that fails it.
	Healthz *HealthzConfig `yaml:"healthz,omitempty"`

	// stateDir is the store directory when there are uplinks (their
	// outboxes and state files live in its layout, storeRoot): the
	// JetStream store directory, else the default state directory.
	// SetDefaults sets it when there are uplinks.
	stateDir string
	// identity is the gateway's identity, once ApplyIdentity found or
	// made it; server_name defaults to its ServerName.
	identity *identity.Identity
	// storageNotes say how SetDefaults reached the JetStream limits
	// (StorageSummary).
	storageNotes []string

	file  string     // the file parsed, for error messages; "" if none
	dir   string     // base for relative paths; "" is the working directory
	index *posIndex  // where each key is in the source; nil if none
	flags flagSource // config paths set by command-line flags
}

// AuthorizationConfig is the authorization block: one token, one user and
// password, or a list of users, as in nats-server.
type AuthorizationConfig struct {
	// Token is a shared secret clients send as auth_token; it may be a
	// bcrypt hash.
	Token string `yaml:"token,omitempty"`
	// User and Password define a single user.
	User     string `yaml:"user,omitempty"`
	Password string `yaml:"password,omitempty"`
	// Users lists users of the global account, or of the account they name.
	Users []UserConfig `yaml:"users,omitempty"`
	// Timeout bounds the wait for CONNECT (default 2s).
	Timeout Duration `yaml:"timeout,omitempty"`
}

// UserConfig is one user: user and password, or an nkey.
type UserConfig struct {
	// User is the name sent in CONNECT user.
	User string `yaml:"user,omitempty"`
	// Password is plain text or a bcrypt hash ($2a$...).
	Password string `yaml:"password,omitempty"`
	// Nkey is a user public NKey (starts with U); the client proves it by
	// signing the server's nonce.
	Nkey string `yaml:"nkey,omitempty"`
	// Account binds the user to an account listed under accounts.
	Account string `yaml:"account,omitempty"`
	// Permissions restrict the user; absent means everything is allowed.
	Permissions *PermissionsConfig `yaml:"permissions,omitempty"`
}

// AccountConfig is one account under accounts.
type AccountConfig struct {
	// Users belong to this account.
	Users []UserConfig `yaml:"users,omitempty"`
}

// PermissionsConfig restricts what a user may publish and subscribe to.
type PermissionsConfig struct {
	// Publish lists subjects the user may publish to.
	Publish *SubjectPermission `yaml:"publish,omitempty"`
	// Subscribe lists subjects the user may subscribe to; an entry may be
	// "subject queue" to name one queue group.
	Subscribe *SubjectPermission `yaml:"subscribe,omitempty"`
	// AllowResponses lets the user reply to requests it received even where
	// Publish denies the reply subject.
	AllowResponses *ResponsePermission `yaml:"allow_responses,omitempty"`
}

// SubjectPermission is an allow list and a deny list of subject patterns.
// In YAML it is a subject or a list of subjects (the allow list), or a
// mapping with allow and deny, each a subject or a list.
type SubjectPermission struct {
	// Allow lists permitted patterns; empty allows all not denied.
	Allow StringList `yaml:"allow,omitempty"`
	// Deny lists forbidden patterns; deny wins over allow.
	Deny StringList `yaml:"deny,omitempty"`
}

type subjectPermissionFields SubjectPermission

// UnmarshalYAML implements the callback form of yaml's unmarshaler, so that
// unknown keys in the mapping form are still rejected.
func (p *SubjectPermission) UnmarshalYAML(unmarshal func(any) error) error {
	var c nodeCapture
	if err := unmarshal(&c); err != nil {
		return err
	}
	switch c.node.Kind {
	case yaml.ScalarNode, yaml.SequenceNode:
		var allow StringList
		if err := unmarshal(&allow); err != nil {
			return err
		}
		*p = SubjectPermission{Allow: allow}
		return nil
	case yaml.MappingNode:
		return unmarshal((*subjectPermissionFields)(p))
	}
	return typeError(c.node, "invalid permission: want a subject, a list of subjects or {allow, deny}")
}

// ResponsePermission allows replies to received requests. In YAML it is
// true or false, or a mapping with max (responses per request, default 1)
// and expires (default 2m).
type ResponsePermission struct {
	// Enabled is false only for "allow_responses: false".
	Enabled bool `yaml:"-"`
	// Max is the number of responses allowed per request.
	Max int `yaml:"max,omitempty"`
	// Expires is how long the permission to respond lasts.
	Expires Duration `yaml:"expires,omitempty"`
}

type responsePermissionFields ResponsePermission

// UnmarshalYAML implements the callback form of yaml's unmarshaler.
func (r *ResponsePermission) UnmarshalYAML(unmarshal func(any) error) error {
	on, f, err := boolOrMapping[responsePermissionFields](unmarshal, "invalid allow_responses: want true, false or {max, expires}")
	switch {
	case err != nil:
		return err
	case f == nil:
		*r = ResponsePermission{Enabled: on}
	default:
		*r = ResponsePermission(*f)
		r.Enabled = true
	}
	return nil
}

// boolOrMapping decodes a value written either as true/false or as a
// mapping of F's fields. It returns the bool with a nil mapping, or the
// mapping; any other form is a type error saying want.
func boolOrMapping[F any](unmarshal func(any) error, want string) (bool, *F, error) {
	var c nodeCapture
	if err := unmarshal(&c); err != nil {
		return false, nil, err
	}
	switch {
	case c.node.Kind == yaml.ScalarNode && c.node.ShortTag() == "!!bool":
		var on bool
		err := unmarshal(&on)
		return on, nil, err
	case c.node.Kind == yaml.MappingNode:
		var f F
		if err := unmarshal(&f); err != nil {
			return false, nil, err
		}
		return false, &f, nil
	}
	return false, nil, typeError(c.node, "%s", want)
}

// MarshalYAML writes true or false when neither max nor expires is set.
func (r ResponsePermission) MarshalYAML() (any, error) {
	if !r.Enabled || (r.Max == 0 && r.Expires == 0) {
		return r.Enabled, nil
	}
	return responsePermissionFields(r), nil
}

// TLSConfig is a tls block: the server's certificate and, optionally, the
// CAs that client certificates must chain to.
type TLSConfig struct {
	// CertFile and KeyFile are PEM files with the certificate chain and its
	// private key.
	CertFile string `yaml:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file,omitempty"`
	// CAFile is a PEM file of CA certificates to verify peers with.
	CAFile string `yaml:"ca_file,omitempty"`
	// Verify requires clients to present a certificate signed by CAFile.
	Verify bool `yaml:"verify,omitempty"`
	// HandshakeFirst performs the TLS handshake before the server's INFO.
	HandshakeFirst bool `yaml:"handshake_first,omitempty"`
	// Timeout bounds the handshake (default 2s).
	Timeout Duration `yaml:"timeout,omitempty"`
}

// JetStreamConfig is the jetstream block. In YAML it is true or false,
// "enabled" or "disabled", or a mapping; a mapping without enabled means
// enabled, as in nats-server. Without the block JetStream is on.
type JetStreamConfig struct {
	// Enabled turns JetStream on; false (jetstream: false, disabled or
	// {enabled: false}) turns it off.
	Enabled bool `yaml:"enabled"`
	// StoreDir holds the file store; it defaults to $STATE_DIRECTORY (set
	// by systemd) or else ~/.local/state/leafbox.
	StoreDir string `yaml:"store_dir,omitempty"`
	// MaxMemoryStore and MaxFileStore bound the storage used. Unset, they
	// default from the machine as in nats-server: 75% of the memory (or
	// GOMEMLIMIT), and 75% of the store's file system space at start less
	// the uplinks' min_free_disk reserve (StorageSummary says how).
	MaxMemoryStore Size `yaml:"max_memory_store,omitempty"`
	MaxFileStore   Size `yaml:"max_file_store,omitempty"`
	// Domain is the JetStream domain.
	Domain string `yaml:"domain,omitempty"`
	// SyncInterval is how often the file store is synced to disk: a
	// duration bounds the loss window on power failure, "always" syncs
	// before every acknowledgement (with group commit).
	SyncInterval SyncInterval `yaml:"sync_interval,omitempty"`
}

type jetStreamFields struct {
	Enabled        *bool        `yaml:"enabled"`
	StoreDir       string       `yaml:"store_dir"`
	MaxMemoryStore Size         `yaml:"max_memory_store"`
	MaxFileStore   Size         `yaml:"max_file_store"`
	Domain         string       `yaml:"domain"`
	SyncInterval   SyncInterval `yaml:"sync_interval"`
}

// UnmarshalYAML implements the callback form of yaml's unmarshaler.
func (j *JetStreamConfig) UnmarshalYAML(unmarshal func(any) error) error {
	var c nodeCapture
	if err := unmarshal(&c); err != nil {
		return err
	}
	if c.node.Kind == yaml.ScalarNode && c.node.ShortTag() == "!!str" {
		// nats-server's string forms.
		switch strings.ToLower(c.node.Value) {
		case "enabled", "enable":
			*j = JetStreamConfig{Enabled: true}
			return nil
		case "disabled", "disable":
			*j = JetStreamConfig{}
			return nil
		}
	}
	on, f, err := boolOrMapping[jetStreamFields](unmarshal, "invalid jetstream: want true, false, enabled, disabled or a mapping")
	switch {
	case err != nil:
		return err
	case f == nil:
		*j = JetStreamConfig{Enabled: on}
	default:
		*j = JetStreamConfig{
			Enabled:        f.Enabled == nil || *f.Enabled,
			StoreDir:       f.StoreDir,
			MaxMemoryStore: f.MaxMemoryStore,
			MaxFileStore:   f.MaxFileStore,
			Domain:         f.Domain,
			SyncInterval:   f.SyncInterval,
		}
	}
	return nil
}

// LeafNodesConfig is the leafnodes block: the hubs this gateway connects
// to as a leaf node, and the port other leafs attach to.
type LeafNodesConfig struct {
	// Remotes are the hubs to connect to, one link each.
	Remotes []RemoteConfig `yaml:"remotes,omitempty"`
	// Listen accepts leaf connections (nats-server or leafbox remotes) on
	// "host:port", "host" or a port; the host defaults to the client
	// listener's (listen, --addr), the port to 7422, and -1 picks a free
	// port.
	Listen HostPort `yaml:"listen,omitempty"`
	// Authorization is what attaching leafs must present.
	Authorization *LeafAuthorizationConfig `yaml:"authorization,omitempty"`
	// TLS makes attaching leafs use TLS (verify checks their certificates).
	TLS *TLSConfig `yaml:"tls,omitempty"`
	// Compression is the S2 mode offered to attaching leafs (default
	// s2_auto), with the values of a remote's compression.
	Compression string `yaml:"compression,omitempty"`
}

// RemoteConfig is one leafnode remote: a hub (one or more URLs of the same
// hub cluster, tried in order with failover), how to authenticate to it,
// and the local account the link is bound to.
type RemoteConfig struct {
	// Name identifies the remote for uplinks[].remote and
	// downlinks[].remote; optional.
	Name string `yaml:"name,omitempty"`
	// URLs of the hub's leafnode port (nats-leaf, nats or tls scheme); URL
	// adds one more after them. User info in a URL is sent as user and
	// password, or as a token when there is no password.
	URLs StringList `yaml:"urls,omitempty"`
	URL  string     `yaml:"url,omitempty"`
	// Credentials is a .creds file (user JWT and NKey seed) to
	// authenticate with. It is read again on every connect.
	Credentials string `yaml:"credentials,omitempty"`
	// Nkey is a file holding a user NKey seed (SU...): the link signs the
	// hub's nonce with it. It cannot be combined with credentials.
	Nkey string `yaml:"nkey,omitempty"`
	// Account is the local account bound to the remote; empty is the
	// global account.
	Account string `yaml:"account,omitempty"`
	// TLS makes the link use TLS and configures the client side of it.
	TLS *RemoteTLSConfig `yaml:"tls,omitempty"`
	// Compression is the S2 compression mode: off, accept, s2_auto (the
	// default), s2_uncompressed, s2_fast, s2_better or s2_best, or one of
	// their aliases (on, auto, fast, better, best, uncompressed, disabled).
	Compression string `yaml:"compression,omitempty"`
	// DenyImports lists subjects the hub must not send to this gateway.
	DenyImports StringList `yaml:"deny_imports,omitempty"`
	// DenyExports lists subjects this gateway never sends to the hub.
	DenyExports StringList `yaml:"deny_exports,omitempty"`
	// PingInterval is how often the link PINGs the hub (default 30s); a
	// link that misses MaxPingsOut PONGs in a row (default 2) is closed as
	// stale and reconnected. Shorten them to notice a dead mobile link (a
	// blackhole that keeps the TCP connection open) sooner.
	PingInterval Duration `yaml:"ping_interval,omitempty"`
	MaxPingsOut  int      `yaml:"max_pings_out,omitempty"`
}

// UplinkConfig is one entry of uplinks: local subjects whose messages are
// stored on the gateway first and forwarded to a hub JetStream stream,
// each removed only after the hub's PubAck. Toward the hub the captured
// subjects travel only through the uplink: they are added to every
// leafnode remote's deny_exports.
//
// The outbox always syncs: captured messages are fsynced (one fsync for
// all captures since the last) before the broker answers a publisher's
// next PING, so a message whose publisher's flush returned survives kill
// -9 and power loss; jetstream.sync_interval does not apply to it. Without
// a PING they are synced within a second, or sooner when the forwarder
// wants to send them: only messages on disk are forwarded.
type UplinkConfig struct {
	// Name identifies the uplink (its outbox directory and Nats-Msg-Id).
	Name string `yaml:"name,omitempty"`
	// Remote is the name of the leafnode remote to forward over; empty is
	// the first remote.
	Remote string `yaml:"remote,omitempty"`
	// Subjects are the local subjects captured (wildcards allowed).
	Subjects StringList `yaml:"subjects,omitempty"`
	// HubSubjectPrefix is prepended to a message's subject toward the hub,
	// such as "site1."; it must not be empty, so that the hub subject is
	// not a captured one.
	HubSubjectPrefix string `yaml:"hub_subject_prefix,omitempty"`
	// Stream is the hub stream expected to store the messages; empty
	// accepts any.
	Stream string `yaml:"stream,omitempty"`
	// HubDomain is the hub's JetStream domain. With Stream set, the
	// gateway reads the hub's time from $JS.<hub_domain>.API.STREAM.INFO.
	// <stream> whenever it connects, to trust its clock without NTP.
	HubDomain string `yaml:"hub_domain,omitempty"`
	// MaxBytes, MaxMsgs and MaxAge bound the outbox; 0 is unlimited.
	// MaxAge is measured on the monotonic clock (leaf/clock), so a clock
	// set from 1970 to today expires nothing.
	MaxBytes Size     `yaml:"max_bytes,omitempty"`
	MaxMsgs  int64    `yaml:"max_msgs,omitempty"`
	MaxAge   Duration `yaml:"max_age,omitempty"`
	// Discard is what a full outbox does: "old" (the default) drops the
	// oldest messages, "new" refuses new ones. Both are counted.
	Discard string `yaml:"discard,omitempty"`
	// MinFreeDisk is the free space (default 32MB) below which a
	// discard-old outbox drops its oldest message for each new one
	// (counted as disk_low), so the disk never fills up; a discard-new
	// outbox refuses new messages once the disk is full (store_full).
	MinFreeDisk Size `yaml:"min_free_disk,omitempty"`
	// Priority orders the uplinks toward the hub: a higher class with
	// messages ready is sent first; equal classes take turns. 0 to 1000.
	Priority int `yaml:"priority,omitempty"`
	// MaxRate caps the uplink's bytes per second toward the hub; 0 is
	// unlimited.
	MaxRate Size `yaml:"max_rate,omitempty"`
	// DailyBudget caps the uplink's bytes per UTC day (a metered link);
	// once used up the uplink waits for 00:00 UTC. 0 is unlimited.
	DailyBudget Size `yaml:"daily_budget,omitempty"`
	// DrainJitter delays draining a backlog after the link comes up by a
	// random time up to this (default 3s; 0 turns it off), so that
	// gateways reconnecting together spread their load.
	DrainJitter *Duration `yaml:"drain_jitter,omitempty"`
	// DeadLetterAfter is how many permanent refusals by the hub (no
	// stream captures the subject, a wrong expected stream, too large, a
	// permissions violation) move a message to the uplink's dead-letter
	// store, so that the messages after it go on (default 3).
	DeadLetterAfter int `yaml:"dead_letter_after,omitempty"`
}

// UplinkLimitsConfig is the uplink_limits block: caps on all uplinks
// together.
type UplinkLimitsConfig struct {
	// MaxRate caps the bytes per second of all uplinks; 0 is unlimited.
	MaxRate Size `yaml:"max_rate,omitempty"`
	// DailyBudget caps the bytes per UTC day of all uplinks; once used up
	// only the uplinks of the highest priority still forward. 0 is
	// unlimited.
	DailyBudget Size `yaml:"daily_budget,omitempty"`
}

// RemoteTLSConfig is the tls block of a leafnode remote: the client side
// of TLS. The hub's certificate is always verified, against CAFile or
// else the system roots.
type RemoteTLSConfig struct {
	// CAFile is a PEM file of CA certificates to verify the hub with.
	CAFile string `yaml:"ca_file,omitempty"`
	// CertFile and KeyFile are the client certificate and its key, for a
	// hub that verifies its leaf nodes.
	CertFile string `yaml:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file,omitempty"`
}

// tlsConfig returns t as a TLSConfig, the form buildTLS reads.
func (t *RemoteTLSConfig) tlsConfig() *TLSConfig {
	return &TLSConfig{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}
}

// RemoteTLSFiles returns the tls block of r with its paths resolved, or
// nil.
func (c *Config) RemoteTLSFiles(r *RemoteConfig) *RemoteTLSConfig {
	if r.TLS == nil {
		return nil
	}
	return &RemoteTLSConfig{CAFile: c.Path(r.TLS.CAFile), CertFile: c.Path(r.TLS.CertFile), KeyFile: c.Path(r.TLS.KeyFile)}
}

// hubURLs returns the remote's URLs in the order they are tried.
func (r *RemoteConfig) hubURLs() []string {
	urls := append([]string(nil), r.URLs...)
	if r.URL != "" {
		urls = append(urls, r.URL)
	}
	return urls
}

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the embedded default configuration file, the one
// Default parses.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

// Default returns the embedded default configuration: clients on
// 0.0.0.0:4222, monitoring on 127.0.0.1:8222, JetStream requested.
func Default() *Config {
	c, err := Parse(defaultYAML)
	if err != nil {
		panic("app: embedded default.yaml is invalid: " + err.Error())
	}
	return c
}

// Load reads and parses the configuration file at path. Relative paths in
// the file are resolved against the file's directory.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	c, err := Parse(data)
	if err != nil {
		if ce, ok := err.(*Error); ok {
			ce.File = path
		}
		return nil, err
	}
	abs, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	c.file, c.dir = path, abs
	return c, nil
}

// File returns the path of the file c was loaded from, or "".
func (c *Config) File() string { return c.file }

// Path resolves p, a path from the configuration, against the directory of
// the file it came from. Absolute and empty paths are returned unchanged.
func (c *Config) Path(p string) string {
	if p == "" || filepath.IsAbs(p) || c.dir == "" {
		return p
	}
	return filepath.Join(c.dir, p)
}

// RedactedSecret replaces passwords and tokens in Redacted's output.
const RedactedSecret = "[REDACTED]"

// Redacted returns a copy of c with passwords and tokens replaced by
// "[REDACTED]", for printing. c is not modified.
func (c *Config) Redacted() *Config {
	out := *c
	redactUsers := func(users []UserConfig) []UserConfig {
		if users == nil {
			return nil
		}
		cp := append([]UserConfig(nil), users...)
		for i := range cp {
			if cp[i].Password != "" {
				cp[i].Password = RedactedSecret
			}
		}
		return cp
	}
	if a := c.Authorization; a != nil {
		ac := *a
		if ac.Token != "" {
			ac.Token = RedactedSecret
		}
		if ac.Password != "" {
			ac.Password = RedactedSecret
		}
		ac.Users = redactUsers(a.Users)
		out.Authorization = &ac
	}
	if c.Accounts != nil {
		out.Accounts = make(map[string]AccountConfig, len(c.Accounts))
		for name, acc := range c.Accounts {
			out.Accounts[name] = AccountConfig{Users: redactUsers(acc.Users)}
		}
	}
	if ln := c.LeafNodes; ln != nil {
		remotes := append([]RemoteConfig(nil), ln.Remotes...)
		for i := range remotes {
			r := &remotes[i]
			r.URL = RedactURL(r.URL)
			if r.URLs != nil {
				urls := make(StringList, len(r.URLs))
				for j, u := range r.URLs {
					urls[j] = RedactURL(u)
				}
				r.URLs = urls
			}
		}
		lnc := *ln
		lnc.Remotes = remotes
		if la := ln.Authorization; la != nil {
			lac := *la
			if lac.Password != "" {
				lac.Password = RedactedSecret
			}
			if lac.Token != "" {
				lac.Token = RedactedSecret
			}
			lac.Users = redactUsers(la.Users)
			lnc.Authorization = &lac
		}
		out.LeafNodes = &lnc
	}
	return &out
}

// RedactURL replaces the password of a URL's user info with
// "[REDACTED]", or the user when it stands alone (a leafnode remote sends
// a lone user as a token). A URL that does not parse is returned unchanged:
// Validate rejects it.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	user := RedactedSecret
	if _, ok := u.User.Password(); ok {
		user = url.User(u.User.Username()).String() + ":" + RedactedSecret
	}
	u.User = nil
	prefix := u.Scheme + "://"
	return prefix + user + "@" + strings.TrimPrefix(u.String(), prefix)
}

// RemoteIndex returns the index of the leafnode remote called name, the
// first one for "", or -1 when there is none.
func (c *Config) RemoteIndex(name string) int {
	if c.LeafNodes == nil || len(c.LeafNodes.Remotes) == 0 {
		return -1
	}
	if name == "" {
		return 0
	}
	for i, r := range c.LeafNodes.Remotes {
		if r.Name == name {
			return i
		}
	}
	return -1
}
