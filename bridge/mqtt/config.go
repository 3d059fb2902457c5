package mqtt

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Version is the MQTT protocol version the bridge speaks.
type Version int

// The MQTT versions the bridge speaks.
const (
	// V5 is MQTT 5.0, the default.
	V5 Version = iota
	// V311 is MQTT 3.1.1.
	V311
)

func (v Version) String() string {
	if v == V311 {
		return "3.1.1"
	}
	return "5"
}

// ParseVersion parses "5" (or "") and "3.1.1".
func ParseVersion(s string) (Version, error) {
	switch s {
	case "", "5", "5.0":
		return V5, nil
	case "3.1.1", "4":
		return V311, nil
	}
	return V5, fmt.Errorf("mqtt: version %q is not 5 or 3.1.1", s)
}

// Defaults for the Config fields left zero.
const (
	DefaultKeepAlive      = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
	DefaultReconnectDelay = 2 * time.Second
	DefaultRequestTimeout = 10 * time.Second
	DefaultQueueLen       = 1024
)

// Config is one MQTT bridge.
type Config struct {
	// Name names the bridge (logs, Nats-Msg-Id).
	Name string
	// Server is the broker's URL: mqtt:// or tcp:// (port 1883 when
	// none), tls://, ssl:// or mqtts:// (port 8883).
	Server string
	// Version is the protocol version.
	Version Version
	// ClientID is the MQTT client id; it must be stable for the broker to
	// keep the bridge's session.
	ClientID string
	// Username and Password authenticate; Password is never logged.
	Username string
	Password []byte
	// TLS is the client TLS configuration for a tls:// server (nil: the
	// system roots).
	TLS *tls.Config
	// CleanStart discards the broker's session on the first connection.
	CleanStart bool
	// SessionExpiry is how long the broker keeps the session after the
	// connection closes (MQTT 5; for 3.1.1 any non-zero value, with
	// CleanStart false, asks for a persistent session).
	SessionExpiry time.Duration
	// KeepAlive is the MQTT keepalive (whole seconds).
	KeepAlive time.Duration
	// ConnectTimeout bounds one connection attempt.
	ConnectTimeout time.Duration
	// ReconnectDelay is the wait between connection attempts.
	ReconnectDelay time.Duration
	// RequestTimeout bounds a request across the bridge, both ways.
	RequestTimeout time.Duration
	// ResponseTopic receives the answers of MQTT devices to NATS requests
	// (MQTT 5); empty turns that direction of request/reply off.
	ResponseTopic string
	// QueueLen bounds the outbound queue.
	QueueLen int
	// Inbound routes MQTT topics to subjects.
	Inbound []InboundRoute
	// Outbound routes subjects to MQTT topics.
	Outbound []OutboundRoute
}

// InboundRoute carries the messages of an MQTT topic filter onto subjects.
type InboundRoute struct {
	// From is the MQTT topic filter subscribed to.
	From string
	// To is prepended to each message's subject: "" or literal tokens
	// ending in '.'.
	To string
	// QoS is the subscription's maximum QoS (0, 1, 2).
	QoS byte
	// Store stores each message of QoS 1/2 in the local stream capturing
	// its subject before acknowledging it to the broker.
	Store bool
}

// OutboundRoute carries the messages of a subject pattern to MQTT topics.
type OutboundRoute struct {
	// From is the subject pattern subscribed to on the bus.
	From string
	// StripPrefix is removed from each subject before it is converted.
	StripPrefix string
	// To is prepended to each converted topic.
	To string
	// QoS is the publish QoS (0, 1, 2).
	QoS byte
	// Retain publishes with the retain flag.
	Retain bool
	// Stream, when set, is the local stream capturing From: the route
	// takes its messages from a durable consumer on it (Durable) rather
	// than from a core subscription, so that they wait in the stream
	// while the broker is unreachable and go out in order when it
	// returns, each acknowledged once the broker accepted it.
	Stream string
	// Durable names the consumer (default "mqtt_<bridge>_<route index>").
	Durable string
}

// withDefaults returns c with its zero durations and lengths filled.
func (c Config) withDefaults() Config {
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ReconnectDelay == 0 {
		c.ReconnectDelay = DefaultReconnectDelay
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.QueueLen == 0 {
		c.QueueLen = DefaultQueueLen
	}
	c.Outbound = append([]OutboundRoute(nil), c.Outbound...)
	for i := range c.Outbound {
		if r := &c.Outbound[i]; r.Stream != "" && r.Durable == "" {
			r.Durable = fmt.Sprintf("mqtt_%s_%d", c.Name, i)
		}
	}
	return c
}

// ServerURL parses s as a broker address: a URL with scheme mqtt, tcp,
// tls, ssl or mqtts, or host:port (mqtt).
func ServerURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("mqtt: no server")
	}
	if !strings.Contains(s, "://") {
		s = "mqtt://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("mqtt: server %q: %w", s, err)
	}
	port := "1883"
	switch u.Scheme {
	case "mqtt", "tcp":
	case "tls", "ssl", "mqtts":
		port = "8883"
	default:
		return nil, fmt.Errorf("mqtt: server %q: scheme %q is not mqtt, tcp, tls, ssl or mqtts", s, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("mqtt: server %q has no host", s)
	}
	if u.Port() == "" {
		u.Host += ":" + port
	}
	return u, nil
}

// IsTLS reports whether u is a TLS scheme.
func IsTLS(u *url.URL) bool { return u.Scheme == "tls" || u.Scheme == "ssl" || u.Scheme == "mqtts" }

// CheckPrefix reports whether p is "" or literal subject tokens ending in
// '.'.
func CheckPrefix(p string) error {
	if p == "" || (strings.HasSuffix(p, ".") && subject.ValidLiteral(p+"x")) {
		return nil
	}
	return fmt.Errorf("%q must be empty or literal tokens ending in '.', such as \"site1.\"", p)
}

// Validate checks c (after defaults).
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if _, err := ServerURL(c.Server); err != nil {
		errs = append(errs, err)
	}
	if c.ClientID == "" {
		bad("mqtt: no client id")
	}
	if c.ResponseTopic != "" {
		if _, err := subject.SubjectFromTopic(c.ResponseTopic); err != nil {
			bad("mqtt: response topic %q: %v", c.ResponseTopic, err)
		}
	}
	for i, r := range c.Inbound {
		if _, _, err := subject.SubjectFromTopicFilter(r.From); err != nil {
			bad("mqtt: inbound[%d].from: %v", i, err)
		}
		if err := CheckPrefix(r.To); err != nil {
			bad("mqtt: inbound[%d].to: %v", i, err)
		}
		if r.QoS > 2 {
			bad("mqtt: inbound[%d].qos: %d is not 0, 1 or 2", i, r.QoS)
		}
	}
	for i, r := range c.Outbound {
		if !subject.Valid(r.From) {
			bad("mqtt: outbound[%d].from: invalid subject %q", i, r.From)
		} else if !strings.HasPrefix(r.From, r.StripPrefix) {
			bad("mqtt: outbound[%d].strip_prefix: %q is not a prefix of from %q", i, r.StripPrefix, r.From)
		}
		if strings.ContainsAny(r.To, "+#\x00") {
			bad("mqtt: outbound[%d].to: %q holds a wildcard or NUL", i, r.To)
		}
		if r.Stream != "" {
			if err := jsapi.CheckName(r.Stream); err != nil {
				bad("mqtt: outbound[%d].stream: %v", i, err)
			}
			if err := jsapi.CheckName(r.Durable); err != nil {
				bad("mqtt: outbound[%d].durable: %v", i, err)
			}
		}
		if r.QoS > 2 {
			bad("mqtt: outbound[%d].qos: %d is not 0, 1 or 2", i, r.QoS)
		}
		for j, in := range c.Inbound {
			subj, _, err := subject.SubjectFromTopicFilter(in.From)
			if err != nil || CheckPrefix(in.To) != nil {
				continue
			}
			if subject.Overlap(in.To+subj, r.From) {
				bad("mqtt: outbound[%d].from %q overlaps the subjects of inbound[%d] %q: messages would loop", i, r.From, j, in.To+subj)
			}
		}
	}
	return errors.Join(errs...)
}
