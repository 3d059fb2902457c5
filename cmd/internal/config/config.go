package config

import (
	_ "embed"
	"os"
	"path/filepath"

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
	// MQTT accepts MQTT 3.1.1 and 5 clients on the same subjects.
	MQTT *MQTTConfig `yaml:"mqtt,omitempty"`
	// Bridges connect devices that do not speak NATS (MQTT brokers,
	// serial ports, Modbus slaves) to subjects.
	Bridges *BridgesConfig `yaml:"bridges,omitempty"`

	// MemoryLimit is the Go runtime's soft memory limit (GOMEMLIMIT):
	// unset, 70 % of the board's memory or its cgroup's limit, whichever
	// is smaller; 0 turns it off. GOMEMLIMIT in the environment wins.
	MemoryLimit *Size `yaml:"memory_limit,omitempty"`
	// Watchdog feeds a hardware watchdog device while leafbox is healthy.
	Watchdog *WatchdogConfig `yaml:"watchdog,omitempty"`
	// Upgrade lists the keys `leafbox upgrade` trusts.
	Upgrade *UpgradeConfig `yaml:"upgrade,omitempty"`
	// Fleet makes the gateway take signed configuration bundles from
	// the hub.
	Fleet *FleetConfig `yaml:"fleet,omitempty"`

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

	hash  string     // Hash: of the YAML parsed
	file  string     // the file parsed, for error messages; "" if none
	dir   string     // base for relative paths; "" is the working directory
	index *posIndex  // where each key is in the source; nil if none
	flags flagSource // config paths set by command-line flags
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
		panic("config: embedded default.yaml is invalid: " + err.Error())
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
