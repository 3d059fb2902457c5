package config

import (
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Scalar types with their own YAML forms. Each UnmarshalYAML reports bad
// input as a *yaml.TypeError whose message starts with "line N:", so the
// decoder collects every problem of a file instead of stopping at the first.
//
// Types that accept either a scalar or a mapping (SubjectPermission,
// ResponsePermission, JetStreamConfig) implement the older
// UnmarshalYAML(func(any) error) form on purpose: the callback decodes with
// the calling decoder, which keeps KnownFields(true) in force for the
// mapping form, while yaml.Node.Decode would silently drop unknown keys.

func typeError(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)}}
}

// nodeCapture records the node being decoded; it lets the old-style
// unmarshalers look at the node's kind and line.
type nodeCapture struct{ node *yaml.Node }

// UnmarshalYAML records n.
func (c *nodeCapture) UnmarshalYAML(n *yaml.Node) error {
	c.node = n
	return nil
}

// Size is a number of bytes. In YAML it is an integer or a string made of an
// integer and a unit, as nats-server accepts: K, M, G, T are powers of 1000;
// KB, KiB, MB, MiB, GB, GiB, TB, TiB (any case, also Ki, Mi, Gi, Ti) are
// powers of 1024; B or no unit means bytes.
type Size int64

var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1000, "kb": 1 << 10, "ki": 1 << 10, "kib": 1 << 10,
	"m": 1000 * 1000, "mb": 1 << 20, "mi": 1 << 20, "mib": 1 << 20,
	"g": 1000 * 1000 * 1000, "gb": 1 << 30, "gi": 1 << 30, "gib": 1 << 30,
	"t": 1000 * 1000 * 1000 * 1000, "tb": 1 << 40, "ti": 1 << 40, "tib": 1 << 40,
}

// ParseSize parses s as described for Size.
func ParseSize(s string) (Size, error) {
	str := strings.TrimSpace(s)
	i := 0
	if i < len(str) && str[i] == '-' {
		i++
	}
	for i < len(str) && str[i] >= '0' && str[i] <= '9' {
		i++
	}
	num, unit := str[:i], strings.ToLower(strings.TrimSpace(str[i:]))
	mult, ok := sizeUnits[unit]
	if num == "" || num == "-" || !ok {
		return 0, fmt.Errorf("invalid size %q: want an integer, optionally with a unit such as 512KB, 1MB, 64MiB or 2G", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/mult || n < math.MinInt64/mult {
		return 0, fmt.Errorf("invalid size %q: out of range", s)
	}
	return Size(n * mult), nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!str") {
		return typeError(n, "invalid size: want an integer or a string such as 1MB")
	}
	v, err := ParseSize(n.Value)
	if err != nil {
		return typeError(n, "%v", err)
	}
	*s = v
	return nil
}

// MarshalYAML writes whole KiB, MiB, GiB or TiB with that unit and any
// other value as a plain integer, so the output parses back to the same size.
func (s Size) MarshalYAML() (any, error) {
	str := s.String()
	if n, err := strconv.ParseInt(str, 10, 64); err == nil {
		return n, nil
	}
	return str, nil
}

// String formats s the way MarshalYAML writes it.
func (s Size) String() string {
	units := []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if s != 0 && int64(s)%u.mult == 0 {
			return strconv.FormatInt(int64(s)/u.mult, 10) + u.name
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

// Duration is a time span. In YAML it is a Go duration string ("10s", "2m",
// "1h30m") or a plain number of seconds, which nats-server uses for some
// options (authorization.timeout, tls.timeout).
type Duration time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeError(n, "invalid duration: want a string such as 10s or 2m, or a number of seconds")
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		secs, err := strconv.ParseFloat(n.Value, 64)
		if err != nil || math.IsNaN(secs) || math.Abs(secs) > float64(math.MaxInt64/int64(time.Second)) {
			return typeError(n, "invalid duration %q: not a usable number of seconds", n.Value)
		}
		*d = Duration(secs * float64(time.Second))
		return nil
	case "!!str":
		v, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			return typeError(n, "invalid duration %q: want a Go duration such as 10s, 2m or 1h30m, or a number of seconds", n.Value)
		}
		*d = Duration(v)
		return nil
	}
	return typeError(n, "invalid duration %q: want a string such as 10s or 2m, or a number of seconds", n.Value)
}

// MarshalYAML writes the Go duration string, such as "2m0s".
func (d Duration) MarshalYAML() (any, error) {
	return d.String(), nil
}

// String formats d as a Go duration string, such as "2m0s".
func (d Duration) String() string { return time.Duration(d).String() }

// HostPort is a listen address. In YAML it is "host:port", "host", ":port"
// or a bare port number; an IPv6 address is written "[::1]:4222" or "::1".
type HostPort struct {
	// Host is the host part; empty means the default host.
	Host string
	// Port is the port part; nil when only a host was given.
	Port *int
}

// ParseHostPort parses s as described for HostPort.
func ParseHostPort(s string) (HostPort, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return HostPort{}, fmt.Errorf("empty address")
	case net.ParseIP(strings.Trim(s, "[]")) != nil:
		return HostPort{Host: strings.Trim(s, "[]")}, nil
	case !strings.Contains(s, ":"):
		if strings.ContainsAny(s, " \t/") {
			return HostPort{}, fmt.Errorf("invalid host %q", s)
		}
		return HostPort{Host: s}, nil
	}
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return HostPort{}, fmt.Errorf("invalid address %q: %v", s, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return HostPort{}, fmt.Errorf("invalid address %q: port %q is not a number", s, portStr)
	}
	return HostPort{Host: host, Port: &port}, nil
}

// UnmarshalYAML implements yaml.Unmarshaler.
func (hp *HostPort) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeError(n, "invalid address: want \"host:port\", \"host\" or a port number")
	}
	if n.ShortTag() == "!!int" {
		port, err := strconv.Atoi(n.Value)
		if err != nil {
			return typeError(n, "invalid port %q", n.Value)
		}
		*hp = HostPort{Port: &port}
		return nil
	}
	v, err := ParseHostPort(n.Value)
	if err != nil {
		return typeError(n, "%v", err)
	}
	*hp = v
	return nil
}

// MarshalYAML writes "host:port", or just the host when there is no port.
func (hp HostPort) MarshalYAML() (any, error) {
	return hp.String(), nil
}

// IsZero reports whether neither host nor port is set (for omitempty).
func (hp HostPort) IsZero() bool { return hp.Host == "" && hp.Port == nil }

// String formats hp the way MarshalYAML writes it.
func (hp HostPort) String() string {
	if hp.Port == nil {
		return hp.Host
	}
	return net.JoinHostPort(hp.Host, strconv.Itoa(*hp.Port))
}

// StringList is a list of strings that may be written as a single string.
type StringList []string

// UnmarshalYAML implements yaml.Unmarshaler.
func (l *StringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			*l = nil
			return nil
		}
		*l = StringList{n.Value}
		return nil
	case yaml.SequenceNode:
		out := make(StringList, 0, len(n.Content))
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				return typeError(item, "invalid list item: want a string")
			}
			out = append(out, item.Value)
		}
		*l = out
		return nil
	}
	return typeError(n, "invalid value: want a string or a list of strings")
}

// SyncAlways is the SyncInterval value that syncs before every
// acknowledgement.
const SyncAlways SyncInterval = -1

// SyncInterval is jetstream.sync_interval: "always", or a duration in
// Duration's forms. Zero means the engine's default interval.
type SyncInterval time.Duration

// UnmarshalYAML implements yaml.Unmarshaler.
func (s *SyncInterval) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && strings.EqualFold(strings.TrimSpace(n.Value), "always") {
		*s = SyncAlways
		return nil
	}
	var d Duration
	if err := d.UnmarshalYAML(n); err != nil {
		return typeError(n, "invalid sync_interval %q: want always or a duration such as 2s", n.Value)
	}
	*s = SyncInterval(d)
	return nil
}

// MarshalYAML writes "always" or the Go duration string.
func (s SyncInterval) MarshalYAML() (any, error) {
	if s == SyncAlways {
		return "always", nil
	}
	return time.Duration(s).String(), nil
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
