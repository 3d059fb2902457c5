package config

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/leafbox/leafbox/bridge/mqtt"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store/jsapi"
)

// DefaultMQTTSessionExpiry is an MQTT bridge's session_expiry when unset:
// how long the site broker keeps the bridge's session, and so the QoS 1/2
// messages queued for it, while the bridge is away.
const DefaultMQTTSessionExpiry = 24 * time.Hour

// MQTTBridgeConfig is one entry of bridges.mqtt: a connection to a site
// MQTT broker, with routes from topics to subjects and back.
type MQTTBridgeConfig struct {
	BridgeCommon `yaml:",inline"`
	// Server is the broker: mqtt://host:port (or tcp://, or host:port;
	// port 1883 when none) or tls://host:port (ssl://, mqtts://; 8883).
	Server string `yaml:"server,omitempty"`
	// Version is the MQTT version: 5 (the default) or 3.1.1.
	Version string `yaml:"version,omitempty"`
	// ClientID is the MQTT client id (default
	// "leafbox-<server_name>-<name>"); keep it stable, the broker keeps
	// the session under it.
	ClientID string `yaml:"client_id,omitempty"`
	// Username and Password authenticate to the broker; PasswordFile
	// holds the password instead (trailing newline removed). The password
	// is never logged nor printed.
	Username     string         `yaml:"username,omitempty"`
	Password     RedactedString `yaml:"password,omitempty"`
	PasswordFile string         `yaml:"password_file,omitempty"`
	// TLS is the client side of TLS toward a tls:// server: the CA file
	// verifying the broker (else the system roots), and a client
	// certificate and key when the broker asks for one.
	TLS *RemoteTLSConfig `yaml:"tls,omitempty"`
	// CleanStart discards the broker's session when the bridge starts.
	CleanStart bool `yaml:"clean_start,omitempty"`
	// SessionExpiry is how long the broker keeps the session after a
	// disconnect (default 24h; 0 ends it with the connection, which
	// loses the QoS 1/2 messages sent meanwhile). MQTT 3.1.1 knows no
	// expiry: any non-zero value asks for a persistent session.
	SessionExpiry *Duration `yaml:"session_expiry,omitempty"`
	// KeepAlive is the MQTT keepalive (default 30s, whole seconds).
	KeepAlive Duration `yaml:"keepalive,omitempty"`
	// ConnectTimeout bounds a connection attempt (default 10s).
	ConnectTimeout Duration `yaml:"connect_timeout,omitempty"`
	// ReconnectDelay is the wait between connection attempts (default
	// 2s).
	ReconnectDelay Duration `yaml:"reconnect_delay,omitempty"`
	// RequestTimeout bounds a store into a stream and a request across
	// the bridge (default 10s).
	RequestTimeout Duration `yaml:"request_timeout,omitempty"`
	// ResponseTopic receives MQTT 5 devices' answers to NATS requests on
	// outbound routes; empty turns that off.
	ResponseTopic string `yaml:"response_topic,omitempty"`
	// QueueLen bounds the outbound messages waiting for the broker
	// (default 1024).
	QueueLen int `yaml:"queue_len,omitempty"`
	// Inbound routes carry topics to subjects.
	Inbound []MQTTInboundRoute `yaml:"inbound,omitempty"`
	// Outbound routes carry subjects to topics.
	Outbound []MQTTOutboundRoute `yaml:"outbound,omitempty"`
}

// MQTTInboundRoute is one inbound route of an MQTT bridge.
type MQTTInboundRoute struct {
	// From is the MQTT topic filter subscribed to ("+" and "#" allowed).
	From string `yaml:"from,omitempty"`
	// To is the subject prefix, "" or literal tokens ending in '.'; topic
	// t becomes To + the subject of t (core/subject's mapping).
	To string `yaml:"to,omitempty"`
	// QoS is the subscription's QoS: 0, 1 (the default) or 2.
	QoS *int `yaml:"qos,omitempty"`
	// Store stores each QoS 1/2 message in the local stream capturing its
	// subject before acknowledging it to the broker; a stream must
	// capture the subjects.
	Store bool `yaml:"store,omitempty"`
}

// MQTTOutboundRoute is one outbound route of an MQTT bridge.
type MQTTOutboundRoute struct {
	// From is the subject pattern subscribed to.
	From string `yaml:"from,omitempty"`
	// StripPrefix is removed from each subject before it becomes a topic;
	// it must be a prefix of From.
	StripPrefix string `yaml:"strip_prefix,omitempty"`
	// To is prepended to the topic, such as "devices/".
	To string `yaml:"to,omitempty"`
	// QoS is the publish QoS: 0, 1 (the default) or 2.
	QoS *int `yaml:"qos,omitempty"`
	// Retain publishes with the retain flag.
	Retain bool `yaml:"retain,omitempty"`
	// Stream is the local stream capturing From: the route then takes its
	// messages from a durable consumer on it, so they wait in the stream
	// while the broker is unreachable and go out in order when it returns.
	// Empty: a core subscription, whose messages are dropped (counted as
	// not_connected) while the broker is unreachable.
	Stream string `yaml:"stream,omitempty"`
	// Durable names that consumer (default "mqtt_<bridge>_<route index>").
	Durable string `yaml:"durable,omitempty"`
}

// RedactedString is a secret: printed as "[REDACTED]" when set.
type RedactedString string

// MarshalYAML hides the secret.
func (s RedactedString) MarshalYAML() (any, error) {
	if s == "" {
		return "", nil
	}
	return RedactedSecret, nil
}

// QoSValue returns the route's QoS, 1 when unset.
func (r MQTTInboundRoute) QoSValue() byte { return qosValue(r.QoS) }

// QoSValue returns the route's QoS, 1 when unset.
func (r MQTTOutboundRoute) QoSValue() byte { return qosValue(r.QoS) }

func qosValue(q *int) byte {
	if q == nil {
		return 1
	}
	return byte(*q)
}

// setMQTTBridgeDefaults fills each MQTT bridge's session expiry and, once
// server_name is known (configured, or derived from the identity, which
// calls this again), its client id; MQTTClientID covers a gateway that
// has neither.
func (c *Config) setMQTTBridgeDefaults() {
	if c.Bridges == nil {
		return
	}
	for i := range c.Bridges.MQTT {
		m := &c.Bridges.MQTT[i]
		if m.SessionExpiry == nil {
			d := Duration(DefaultMQTTSessionExpiry)
			m.SessionExpiry = &d
		}
		if m.ClientID == "" && c.ServerName != "" && m.Name != "" {
			m.ClientID = c.MQTTClientID(m)
		}
	}
}

// MQTTClientID returns the client id of the bridge m: its client_id, or
// "leafbox-<server_name>-<name>" ("leafbox-<name>" without a
// server_name). SetDefaults fills client_id when server_name is known.
func (c *Config) MQTTClientID(m *MQTTBridgeConfig) string {
	if m.ClientID != "" {
		return m.ClientID
	}
	id := "leafbox-" + m.Name
	if c.ServerName != "" {
		id = "leafbox-" + c.ServerName + "-" + m.Name
	}
	return id
}

// MQTTSessionExpiry returns the session expiry of the bridge m.
func (m *MQTTBridgeConfig) MQTTSessionExpiry() time.Duration {
	if m.SessionExpiry == nil {
		return DefaultMQTTSessionExpiry
	}
	return time.Duration(*m.SessionExpiry)
}

// MQTTPassword returns the password of the bridge m: password, or the
// contents of password_file without its trailing newline.
func (c *Config) MQTTPassword(m *MQTTBridgeConfig) ([]byte, error) {
	if m.PasswordFile == "" {
		return []byte(m.Password), nil
	}
	b, err := os.ReadFile(c.Path(m.PasswordFile))
	if err != nil {
		return nil, err
	}
	return []byte(strings.TrimRight(string(b), "\r\n")), nil
}

// bridgesMQTT checks the bridges.mqtt entries beyond their names.
func (v *validator) bridgesMQTT() {
	for i := range v.c.Bridges.MQTT {
		m := &v.c.Bridges.MQTT[i]
		path := fmt.Sprintf("bridges.mqtt[%d]", i)
		u, err := mqtt.ServerURL(m.Server)
		if m.Server == "" {
			v.errf(path+".server", "is required")
		} else if err != nil {
			v.errf(path+".server", "%v", strings.TrimPrefix(err.Error(), "mqtt: "))
		}
		ver, err := mqtt.ParseVersion(m.Version)
		if err != nil {
			v.errf(path+".version", "%q is not 5 or 3.1.1", m.Version)
		}
		if m.Password != "" && m.PasswordFile != "" {
			v.errf(path+".password_file", "set password or password_file, not both")
		}
		if m.PasswordFile != "" {
			if _, err := v.c.MQTTPassword(m); err != nil {
				v.errf(path+".password_file", "%v", err)
			}
		}
		if (m.Password != "" || m.PasswordFile != "") && m.Username == "" && ver == mqtt.V311 {
			v.errf(path+".username", "MQTT 3.1.1 sends a password only with a username")
		}
		if m.TLS != nil {
			if u != nil && !mqtt.IsTLS(u) {
				v.errf(path+".tls", "needs a tls:// server (server is %q)", m.Server)
			}
			if _, err := v.c.RemoteTLS(path+".tls", m.TLS); err != nil {
				if ce, ok := err.(*Error); ok {
					v.problems = append(v.problems, ce.Problems...)
				} else {
					v.err(path+".tls", err)
				}
			}
		}
		if len(v.c.MQTTClientID(m)) > 65535 {
			v.errf(path+".client_id", "is longer than 65535 bytes")
		}
		for key, d := range map[string]Duration{"keepalive": m.KeepAlive, "connect_timeout": m.ConnectTimeout,
			"reconnect_delay": m.ReconnectDelay, "request_timeout": m.RequestTimeout} {
			if d < 0 {
				v.errf(path+"."+key, "must not be negative")
			}
		}
		if m.KeepAlive > Duration(65535*time.Second) {
			v.errf(path+".keepalive", "must be at most 65535s")
		}
		if m.SessionExpiry != nil && (*m.SessionExpiry < 0 || *m.SessionExpiry > Duration(0xFFFFFFFF*time.Second)) {
			v.errf(path+".session_expiry", "must be between 0 and %ds", uint32(0xFFFFFFFF))
		}
		if m.QueueLen < 0 {
			v.errf(path+".queue_len", "must not be negative")
		}
		if m.ResponseTopic != "" {
			if ver == mqtt.V311 {
				v.errf(path+".response_topic", "needs MQTT 5 (version is 3.1.1)")
			} else if _, err := subject.SubjectFromTopic(m.ResponseTopic); err != nil {
				v.errf(path+".response_topic", "%v", err)
			}
		}
		if len(m.Inbound) == 0 && len(m.Outbound) == 0 {
			v.errf(path, "needs at least one inbound or outbound route")
		}
		v.mqttRoutes(path, m)
	}
}

// mqttRoutes checks the routes of the MQTT bridge m at path.
func (v *validator) mqttRoutes(path string, m *MQTTBridgeConfig) {
	checkQoS := func(at string, q *int) {
		if q != nil && (*q < 0 || *q > 2) {
			v.errf(at, "%d is not 0, 1 or 2", *q)
		}
	}
	for i, r := range m.Inbound {
		at := fmt.Sprintf("%s.inbound[%d]", path, i)
		if r.From == "" {
			v.errf(at+".from", "is required (an MQTT topic filter)")
		} else if _, _, err := subject.SubjectFromTopicFilter(r.From); err != nil {
			v.errf(at+".from", "%v", err)
		}
		if err := mqtt.CheckPrefix(r.To); err != nil {
			v.errf(at+".to", "%v", err)
		}
		checkQoS(at+".qos", r.QoS)
		if r.Store && r.QoS != nil && *r.QoS == 0 {
			v.errf(at+".store", "has no effect at qos 0 (QoS 0 messages are published, not stored)")
		}
	}
	for i, r := range m.Outbound {
		at := fmt.Sprintf("%s.outbound[%d]", path, i)
		switch {
		case r.From == "":
			v.errf(at+".from", "is required (a subject pattern)")
		case !subject.Valid(r.From):
			v.errf(at+".from", "invalid subject %q", r.From)
		case !strings.HasPrefix(r.From, r.StripPrefix):
			v.errf(at+".strip_prefix", "%q is not a prefix of from %q", r.StripPrefix, r.From)
		}
		if strings.ContainsAny(r.To, "+#\x00") {
			v.errf(at+".to", "%q must not hold a wildcard or NUL", r.To)
		}
		checkQoS(at+".qos", r.QoS)
		if err := jsapi.CheckName(r.Stream); r.Stream != "" && err != nil {
			v.errf(at+".stream", "%q is not a stream name: %v", r.Stream, err)
		}
		if err := jsapi.CheckName(r.Durable); r.Durable != "" && err != nil {
			v.errf(at+".durable", "%q is not a consumer name: %v", r.Durable, err)
		}
		if r.Durable != "" && r.Stream == "" {
			v.errf(at+".durable", "needs stream")
		}
		for j, in := range m.Inbound {
			subj, _, err := subject.SubjectFromTopicFilter(in.From)
			if err != nil || mqtt.CheckPrefix(in.To) != nil || !subject.Valid(r.From) {
				continue
			}
			if subject.Overlap(in.To+subj, r.From) {
				v.errf(at+".from", "%q overlaps the subjects of inbound[%d] (%q): messages would loop", r.From, j, in.To+subj)
			}
		}
	}
}
