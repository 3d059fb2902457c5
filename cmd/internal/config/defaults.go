package config

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/leafbox/leafbox/core/server"
)

// Defaults that are the application's own; the broker's come from the
// server package.
const (
	// DefaultHTTPHost keeps monitoring on loopback, as fits an appliance.
	DefaultHTTPHost = "127.0.0.1"
	// DefaultHTTPPort is nats-server's monitoring port.
	DefaultHTTPPort = 8222
	// stateSubdir is the store's directory under $HOME when systemd gives
	// no $STATE_DIRECTORY.
	stateSubdir = ".local/state/leafbox"
)

// Env is what the process environment contributes to defaults. Only
// OSEnv reads the real environment, so tests pass their own.
type Env struct {
	// StateDirectory is systemd's $STATE_DIRECTORY (colon-separated when
	// the unit names several; the first is used).
	StateDirectory string
	// Home is the user's home directory.
	Home string
	// Machine is read for the JetStream limits' defaults.
	Machine Machine
	// JSKey is $LEAFBOX_JS_KEY, the JetStream encryption key used when the
	// file gives none.
	JSKey string
}

// OSEnv reads Env from the process environment and the machine.
func OSEnv() Env {
	home, _ := os.UserHomeDir()
	return Env{StateDirectory: os.Getenv("STATE_DIRECTORY"), Home: home, Machine: OSMachine(), JSKey: os.Getenv(KeyEnv)}
}

// DefaultStoreDir is the JetStream store directory used when neither a
// flag nor the file names one: $STATE_DIRECTORY, else ~/.local/state/leafbox.
func (e Env) DefaultStoreDir() string {
	if first, _, _ := strings.Cut(e.StateDirectory, ":"); first != "" {
		return first
	}
	if e.Home == "" {
		return ""
	}
	return filepath.Join(e.Home, stateSubdir)
}

// SetDefaults fills every unset option with its default, so the Config
// shows the effective configuration. It does not validate.
func (c *Config) SetDefaults(env Env) {
	if c.Listen.Host == "" {
		c.Listen.Host = server.DefaultHost
	}
	if c.Port == 0 {
		c.Port = server.DefaultPort
	}
	if ln := c.LeafNodes; ln != nil && !ln.Listen.IsZero() && ln.Listen.Host == "" {
		// A listener given only a port (--leaf-port) follows the client
		// listener's host: --addr 127.0.0.1 keeps leafs on loopback too.
		ln.Listen.Host = c.Listen.Host
	}
	if c.HTTP.Host == "" {
		c.HTTP.Host = DefaultHTTPHost
	}
	if c.HTTPPort == nil {
		p := DefaultHTTPPort
		c.HTTPPort = &p
	}
	setDefault(&c.MaxPayload, server.DefaultMaxPayload)
	setDefault(&c.MaxPending, server.DefaultMaxPending)
	setDefault(&c.MaxControlLine, server.DefaultMaxControlLine)
	setDefault(&c.MaxConnections, server.DefaultMaxConnections)
	setDefault(&c.PingInterval, Duration(server.DefaultPingInterval))
	setDefault(&c.PingMax, server.DefaultMaxPingsOut)
	setDefault(&c.WriteDeadline, Duration(server.DefaultWriteDeadline))
	setDefault(&c.LameDuckDuration, Duration(server.DefaultLameDuckDuration))
	setDefault(&c.LameDuckGracePeriod, Duration(server.DefaultLameDuckGrace))
	if c.Authorization != nil {
		setDefault(&c.Authorization.Timeout, Duration(server.DefaultAuthTimeout))
	}
	if c.TLS != nil {
		setDefault(&c.TLS.Timeout, Duration(server.DefaultTLSTimeout))
	}
	if c.JetStream == nil {
		// On whether or not a file is given: a file without a jetstream
		// block runs it as the built-in configuration does.
		c.JetStream = &JetStreamConfig{Enabled: true}
	}
	if c.JetStream.Enabled && c.JetStream.StoreDir == "" {
		c.JetStream.StoreDir = env.DefaultStoreDir()
	}
	c.JetStream.StoreDir = c.Path(c.JetStream.StoreDir)
	c.JetStream.envKey = env.JSKey
	if c.JetStream.KeyFile != "" {
		c.JetStream.KeyFile = c.Path(c.JetStream.KeyFile)
	}
	setUplinkDefaults(c)
	c.setDownlinkDefaults()
	if len(c.Uplinks) > 0 && c.stateDir == "" {
		c.stateDir = c.JetStream.StoreDir
		if c.stateDir == "" {
			c.stateDir = env.DefaultStoreDir()
		}
	}
	c.setStorageDefaults(env.Machine)
	c.setHealthzDefaults()
	c.setMQTTDefaults()
	c.setMQTTBridgeDefaults()
	c.setSerialBridgeDefaults()
	c.setModbusBridgeDefaults()
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// MonitorPort returns the effective monitoring port: http_port, or
// DefaultHTTPPort before SetDefaults; 0 means monitoring is off.
func (c *Config) MonitorPort() int {
	if c.HTTPPort == nil {
		return DefaultHTTPPort
	}
	return *c.HTTPPort
}
