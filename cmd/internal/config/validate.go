package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"strings"
)

// maxPayloadLimit is nats-server's hard upper bound for max_payload.
const maxPayloadLimit = 64 << 20

// validator collects every problem of a Config instead of stopping at the
// first one.
type validator struct {
	c        *Config
	problems []*FieldError
}

func (v *validator) errf(path, format string, args ...any) {
	v.problems = append(v.problems, v.c.fieldErr(path, fmt.Errorf(format, args...)))
}

func (v *validator) err(path string, err error) {
	v.problems = append(v.problems, v.c.fieldErr(path, err))
}

// Validate reports every problem of c as a *Error whose entries carry
// the key path and, for values from a file, the line. Call SetDefaults
// first: Validate checks effective values. It reads the files that c names
// (certificates, credentials) to check them.
func (c *Config) Validate() error {
	v := &validator{c: c}
	v.listeners()
	v.limits()
	v.authorization()
	if c.TLS != nil {
		_, problems := c.buildTLS("tls", c.TLS, true)
		v.problems = append(v.problems, problems...)
	}
	v.jetStream()
	v.leafNodes()
	v.uplinks()
	v.downlinks()
	v.healthz()
	v.bridges()
	v.mqtt()
	v.memoryLimit()
	v.watchdog()
	v.upgrade()
	v.fleet()
	if len(v.problems) == 0 {
		v.authPackage()
	}
	err := newError(v.problems)
	if ce, ok := err.(*Error); ok {
		ce.File = c.file
	}
	return err
}

func (v *validator) listeners() {
	c := v.c
	if err := checkHost(c.Listen.Host); err != nil {
		v.err("listen", err)
	}
	if c.Port < -1 || c.Port > 65535 {
		v.errf("port", "%d is out of range (1-65535, or -1 for a free port)", c.Port)
	}
	if err := checkHost(c.HTTP.Host); err != nil {
		v.err("http", err)
	}
	if c.HTTPPort != nil {
		p := *c.HTTPPort
		switch {
		case p < -1 || p > 65535:
			v.errf("http_port", "%d is out of range (1-65535, 0 to turn monitoring off, or -1 for a free port)", p)
		case p > 0 && p == c.Port:
			v.errf("http_port", "%d is also the client port", p)
		}
	}
	if strings.ContainsAny(c.ServerName, " \t\r\n") {
		v.errf("server_name", "%q must not contain whitespace", c.ServerName)
	}
}

func checkHost(host string) error {
	if host == "" {
		return errors.New("empty host")
	}
	if net.ParseIP(host) == nil && strings.ContainsAny(host, ":/ \t[]") {
		return fmt.Errorf("invalid host %q", host)
	}
	return nil
}

func (v *validator) limits() {
	c := v.c
	switch {
	case c.MaxPayload <= 0:
		v.errf("max_payload", "must be positive")
	case c.MaxPayload > maxPayloadLimit:
		v.errf("max_payload", "%v exceeds the limit of 64MiB", c.MaxPayload)
	case c.MaxPending > 0 && c.MaxPayload > c.MaxPending:
		v.errf("max_payload", "%v must not exceed max_pending (%v)", c.MaxPayload, c.MaxPending)
	}
	if c.MaxPending <= 0 {
		v.errf("max_pending", "must be positive")
	}
	if c.MaxControlLine <= 0 || c.MaxControlLine > math.MaxInt32 {
		v.errf("max_control_line", "must be between 1 and %d", math.MaxInt32)
	}
	nonNegative := []struct {
		path string
		val  int64
	}{
		{"max_connections", int64(c.MaxConnections)},
		{"max_subscriptions", int64(c.MaxSubscriptions)},
		{"ping_max", int64(c.PingMax)},
		{"lame_duck_grace_period", int64(c.LameDuckGracePeriod)},
	}
	for _, f := range nonNegative {
		if f.val < 0 {
			v.errf(f.path, "must not be negative")
		}
	}
	positive := []struct {
		path string
		val  Duration
	}{
		{"ping_interval", c.PingInterval},
		{"write_deadline", c.WriteDeadline},
		{"lame_duck_duration", c.LameDuckDuration},
	}
	for _, f := range positive {
		if f.val <= 0 {
			v.errf(f.path, "must be positive")
		}
	}
	if c.LameDuckGracePeriod >= c.LameDuckDuration && c.LameDuckDuration > 0 {
		v.errf("lame_duck_grace_period", "%v must be shorter than lame_duck_duration (%v)",
			c.LameDuckGracePeriod, c.LameDuckDuration)
	}
}
