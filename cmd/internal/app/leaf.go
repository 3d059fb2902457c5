package app

import (
	"slices"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/leaf"
)

// leafConfig maps a leafnode remote to the link's configuration, with the
// paths resolved against the configuration file. The caller adds what
// needs the running broker or the files: ServerID and TLS; the leaf
// runtime adds the uplinks' and downlinks' loop-prevention denies
// (leaf/node).
func (c *Config) leafConfig(r *RemoteConfig) leaf.Config {
	compression, ok := canonicalCompression(r.Compression)
	if !ok {
		compression = r.Compression // Validate reports it
	}
	lc := leaf.Config{
		URLs:         r.hubURLs(),
		Account:      r.Account,
		Credentials:  c.Path(r.Credentials),
		NkeySeedFile: c.Path(r.Nkey),
		Compression:  compression,
		DenyImports:  slices.Clone([]string(r.DenyImports)),
		DenyExports:  slices.Clone([]string(r.DenyExports)),
		Name:         c.ServerName,
		PingInterval: time.Duration(r.PingInterval),
		MaxPingsOut:  r.MaxPingsOut,
	}
	if js := c.JetStream; js != nil && js.Enabled {
		lc.Domain = js.Domain
		// The JetStream engine serves the global account only.
		lc.JetStream = r.Account == "" || r.Account == auth.GlobalAccount
	}
	return lc
}
