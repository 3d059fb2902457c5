package app

import (
	"time"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/server"
)

// serverOptions validates cfg (config.Config.Validate, which includes the
// auth package's own validation of the resulting auth.Config) and builds
// the broker's options from it: auth configuration, TLS configuration and
// limits. Call SetDefaults first. The returned options have no Logger;
// the App sets it.
func serverOptions(cfg *config.Config) (server.Options, error) {
	if err := cfg.Validate(); err != nil {
		return server.Options{}, err
	}
	opts := server.Options{
		ServerName:          cfg.ServerName,
		Host:                cfg.Listen.Host,
		Port:                cfg.Port,
		MaxPayload:          int32(cfg.MaxPayload),
		MaxControlLine:      int32(cfg.MaxControlLine),
		MaxPending:          int64(cfg.MaxPending),
		MaxConnections:      cfg.MaxConnections,
		MaxSubs:             cfg.MaxSubscriptions,
		PingInterval:        time.Duration(cfg.PingInterval),
		MaxPingsOut:         cfg.PingMax,
		WriteDeadline:       time.Duration(cfg.WriteDeadline),
		LameDuckDuration:    time.Duration(cfg.LameDuckDuration),
		LameDuckGracePeriod: time.Duration(cfg.LameDuckGracePeriod),
		Auth:                cfg.Auth(),
	}
	if js := cfg.JetStream; js != nil && js.Enabled {
		opts.JetStream = true
		opts.JetStreamDomain = js.Domain
	}
	if a := cfg.Authorization; a != nil {
		opts.AuthTimeout = time.Duration(a.Timeout)
	}
	if t := cfg.TLS; t != nil {
		tc, err := cfg.ServerTLS("tls", t)
		if err != nil {
			return server.Options{}, err
		}
		opts.TLS = tc
		opts.TLSRequired = true
		opts.TLSVerify = t.Verify
		opts.TLSHandshakeFirst = t.HandshakeFirst
		opts.TLSTimeout = time.Duration(t.Timeout)
	}
	return opts, nil
}
