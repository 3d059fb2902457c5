package app

import (
	"log/slog"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/outbox"
	"github.com/leafbox/leafbox/store/jetstream"
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
		opts.JetStreamAPILevel = jetstream.APILevel
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

// jetStreamConfig is the JetStream engine's configuration: the jetstream
// block, with the streams in the store directory's layout. It reads the
// encryption key (key_file, $LEAFBOX_JS_KEY).
func jetStreamConfig(cfg *config.Config, log *slog.Logger) (jetstream.Config, error) {
	js := cfg.JetStream
	enc, err := StoreEncryption(cfg)
	if err != nil {
		return jetstream.Config{}, err
	}
	return jetstream.Config{
		Encryption:   enc,
		StoreDir:     cfg.Layout().Streams(),
		MaxMemory:    int64(js.MaxMemoryStore),
		MaxStore:     int64(js.MaxFileStore),
		Domain:       js.Domain,
		SyncInterval: time.Duration(js.SyncInterval),
		Logger:       log.With("subsystem", "jetstream"),
	}, nil
}

// leafAcceptConfig builds the listener's configuration from cfg's
// leafnodes block; the caller adds the server's id. cfg has been
// validated, so the tls block's files load.
func leafAcceptConfig(cfg *config.Config) (leaf.AcceptConfig, error) {
	ln := cfg.LeafNodes
	ac := leaf.AcceptConfig{
		Addr:          cfg.LeafListenAddr(),
		Auth:          cfg.LeafAuth(),
		ServerName:    cfg.ServerName,
		MaxPayload:    int64(cfg.MaxPayload),
		PingInterval:  time.Duration(cfg.PingInterval),
		MaxPingsOut:   cfg.PingMax,
		WriteDeadline: time.Duration(cfg.WriteDeadline),
	}
	if mode, err := leaf.NormalizeCompression(ln.Compression); err == nil {
		ac.Compression = mode
	} else {
		ac.Compression = ln.Compression // Validate reports it
	}
	if la := ln.Authorization; la != nil {
		ac.Account = la.Account
		ac.AuthTimeout = time.Duration(la.Timeout)
	}
	if js := cfg.JetStream; js != nil && js.Enabled {
		ac.JetStream = true
		ac.Domain = js.Domain
	}
	if ln.TLS != nil {
		tc, err := cfg.ServerTLS("leafnodes.tls", ln.TLS)
		if err != nil {
			return ac, err
		}
		ac.TLS = tc
		if ln.TLS.Timeout > 0 && ac.AuthTimeout < time.Duration(ln.TLS.Timeout) {
			ac.AuthTimeout = time.Duration(ln.TLS.Timeout)
		}
	}
	return ac, nil
}

// outboxConfig is uplink u's outbox configuration, all that comes from
// the file: naming, hub target, age limit, dead letters, scheduling and
// the state file. The caller adds what the running gateway provides: the
// server name, logger, clock, dead-letter store, shared scheduler and the
// disk-low check.
func outboxConfig(c *config.Config, u *config.UplinkConfig) outbox.Config {
	oc := outbox.Config{
		Name:            u.Name,
		HubPrefix:       u.HubSubjectPrefix,
		Stream:          u.Stream,
		HubDomain:       u.HubDomain,
		MaxAge:          time.Duration(u.MaxAge),
		DeadLetterAfter: u.DeadLetterAfter,
		Priority:        u.Priority,
		MaxRate:         int64(u.MaxRate),
		DailyBudget:     int64(u.DailyBudget),
		StateFile:       c.OutboxStateFile(u),
	}
	if u.DrainJitter != nil {
		oc.DrainJitter = time.Duration(*u.DrainJitter)
	}
	return oc
}
