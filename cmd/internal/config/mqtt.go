package config

import (
	"net"
	"strconv"
	"time"
)

// DefaultMQTTPort is the MQTT listener's port when mqtt.listen gives only
// a host.
const DefaultMQTTPort = 1883

// Defaults of the mqtt block.
const (
	DefaultMQTTMaxPacketSize = 1 << 20
	DefaultMQTTMaxInflight   = 64
	DefaultMQTTMaxQueue      = 10000
	DefaultMQTTParkAfter     = Duration(50 * time.Millisecond)
)

// Bounds of mqtt.park_after.
const (
	minMQTTParkAfter = Duration(time.Millisecond)
	maxMQTTParkAfter = Duration(time.Hour)
)

// MQTTConfig is the mqtt block: MQTT 3.1.1 and 5 clients connect here and
// publish and subscribe on the same subjects, accounts and permissions as
// NATS clients (topic a/b is subject a.b).
type MQTTConfig struct {
	// Listen is "host:port", "host" or a port; the host defaults to the
	// client listener's, the port to 1883, and -1 picks a free port.
	Listen HostPort `yaml:"listen,omitempty"`
	// TLS makes MQTT clients use TLS (verify checks their certificates).
	TLS *TLSConfig `yaml:"tls,omitempty"`
	// MaxConnections bounds concurrent MQTT connections (0: unlimited).
	MaxConnections int `yaml:"max_connections,omitempty"`
	// MaxPacketSize bounds a packet from a client (default 1MiB), at most
	// max_payload plus the topic and properties.
	MaxPacketSize Size `yaml:"max_packet_size,omitempty"`
	// MaxInflight bounds the QoS 1 and 2 messages in flight to a client
	// and is the receive maximum announced to MQTT 5 clients (default 64,
	// at most 65535).
	MaxInflight int `yaml:"max_inflight,omitempty"`
	// MaxQueue bounds the QoS 1 and 2 messages a session keeps waiting
	// (default 10000); more are dropped and counted.
	MaxQueue int `yaml:"max_queue,omitempty"`
	// MaxSessions, MaxRetained and MaxRetainedBytes bound the persistent
	// sessions and retained messages kept per account (0: unlimited); a
	// session or retained message past them is refused and logged.
	MaxSessions      int  `yaml:"max_sessions,omitempty"`
	MaxRetained      int  `yaml:"max_retained,omitempty"`
	MaxRetainedBytes Size `yaml:"max_retained_bytes,omitempty"`
	// MinKeepAlive and MaxKeepAlive bound the keep alive clients may ask
	// for (unset: no bound).
	MinKeepAlive Duration `yaml:"min_keepalive,omitempty"`
	MaxKeepAlive Duration `yaml:"max_keepalive,omitempty"`
	// ConnectTimeout bounds the wait for CONNECT (default 10s).
	ConnectTimeout Duration `yaml:"connect_timeout,omitempty"`
	// ParkAfter is how long a client's reader waits for a byte before
	// the connection parks (default 50ms, between 1ms and 1h; -1: never):
	// a parked client holds no goroutine and no read buffer, an epoll set
	// waits for its bytes (Linux). Shorter parks idle clients sooner and
	// costs a reader start when a client sends again soon after.
	ParkAfter Duration `yaml:"park_after,omitempty"`
}

// setMQTTDefaults fills the mqtt block's defaults.
func (c *Config) setMQTTDefaults() {
	m := c.MQTT
	if m == nil {
		return
	}
	if !m.Listen.IsZero() && m.Listen.Host == "" {
		m.Listen.Host = c.Listen.Host
	}
	setDefault(&m.MaxPacketSize, DefaultMQTTMaxPacketSize)
	setDefault(&m.MaxInflight, DefaultMQTTMaxInflight)
	setDefault(&m.MaxQueue, DefaultMQTTMaxQueue)
	setDefault(&m.ConnectTimeout, Duration(10*time.Second))
	setDefault(&m.ParkAfter, DefaultMQTTParkAfter)
	if m.TLS != nil {
		setDefault(&m.TLS.Timeout, Duration(2*time.Second))
	}
}

// MQTTListenAddr returns the MQTT listener's "host:port" (port 0 for
// -1), or "" when mqtt.listen is not set.
func (c *Config) MQTTListenAddr() string {
	m := c.MQTT
	if m == nil || m.Listen.IsZero() {
		return ""
	}
	host := m.Listen.Host
	if host == "" {
		host = c.Listen.Host
	}
	port := DefaultMQTTPort
	if m.Listen.Port != nil {
		port = max(*m.Listen.Port, 0)
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// mqtt checks the mqtt block.
func (v *validator) mqtt() {
	m := v.c.MQTT
	if m == nil {
		return
	}
	if m.Listen.IsZero() {
		v.errf("mqtt.listen", "missing: the address MQTT clients connect to, such as 0.0.0.0:1883")
		return
	}
	if m.Listen.Host != "" {
		if err := checkHost(m.Listen.Host); err != nil {
			v.err("mqtt.listen", err)
		}
	}
	if p := m.Listen.Port; p != nil {
		switch {
		case *p < -1 || *p > 65535:
			v.errf("mqtt.listen", "port %d out of range (1-65535, or -1 for a free port)", *p)
		case *p > 0 && *p == v.c.Port:
			v.errf("mqtt.listen", "port %d is also the client port", *p)
		case *p > 0 && v.c.HTTPPort != nil && *p == *v.c.HTTPPort:
			v.errf("mqtt.listen", "port %d is also the monitoring port", *p)
		}
	}
	if m.MaxConnections < 0 {
		v.errf("mqtt.max_connections", "must not be negative")
	}
	switch {
	case m.MaxPacketSize < 0:
		v.errf("mqtt.max_packet_size", "must not be negative")
	case m.MaxPacketSize > 256<<20-1:
		// The remaining length field holds at most 268,435,455 bytes.
		v.errf("mqtt.max_packet_size", "%v exceeds MQTT's limit of 256MiB", m.MaxPacketSize)
	case m.MaxPacketSize > 0 && v.c.MaxPayload > 0 && m.MaxPacketSize > v.c.MaxPayload+64<<10:
		v.errf("mqtt.max_packet_size", "%v is larger than max_payload (%v) allows (plus 64KiB of topic and properties)", m.MaxPacketSize, v.c.MaxPayload)
	}
	if m.MaxInflight < 0 || m.MaxInflight > 65535 {
		v.errf("mqtt.max_inflight", "%d is out of range (1-65535)", m.MaxInflight)
	}
	if m.MaxQueue < 0 {
		v.errf("mqtt.max_queue", "must not be negative")
	}
	if m.MaxSessions < 0 {
		v.errf("mqtt.max_sessions", "must not be negative")
	}
	if m.MaxRetained < 0 {
		v.errf("mqtt.max_retained", "must not be negative")
	}
	if m.MaxRetainedBytes < 0 {
		v.errf("mqtt.max_retained_bytes", "must not be negative")
	}
	if m.MinKeepAlive < 0 {
		v.errf("mqtt.min_keepalive", "must not be negative")
	}
	if m.MaxKeepAlive < 0 || time.Duration(m.MaxKeepAlive) > 65535*time.Second {
		v.errf("mqtt.max_keepalive", "must be between 0 and 65535s (18h12m15s)")
	}
	if m.MinKeepAlive > 0 && m.MaxKeepAlive > 0 && m.MinKeepAlive > m.MaxKeepAlive {
		v.errf("mqtt.min_keepalive", "%v is above max_keepalive (%v)", time.Duration(m.MinKeepAlive), time.Duration(m.MaxKeepAlive))
	}
	if m.ConnectTimeout < 0 {
		v.errf("mqtt.connect_timeout", "must not be negative")
	}
	if p := m.ParkAfter; p != -Duration(time.Second) && (p < minMQTTParkAfter || p > maxMQTTParkAfter) {
		v.errf("mqtt.park_after", "%v is out of range (%v to %v, or -1 to never park)", time.Duration(p), time.Duration(minMQTTParkAfter), time.Duration(maxMQTTParkAfter))
	}
	if m.TLS != nil {
		_, problems := v.c.buildTLS("mqtt.tls", m.TLS, true)
		v.problems = append(v.problems, problems...)
	}
}
