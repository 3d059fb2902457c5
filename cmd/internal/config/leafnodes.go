package config

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/leaf"
)

// LeafConfig maps a leafnode remote to the link's configuration, with the
// paths resolved against the configuration file. The caller adds what
// needs the running broker or the files: ServerID and TLS.
func (c *Config) LeafConfig(r *RemoteConfig) leaf.Config {
	compression, err := leaf.NormalizeCompression(r.Compression)
	if err != nil {
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
	// What uplinks capture reaches the hub only through them.
	for _, u := range c.Uplinks {
		lc.DenyExports = append(lc.DenyExports, u.Subjects...)
	}
	lc.DenyImports = append(lc.DenyImports, c.downlinkImports()...)
	lc.DenyExports = append(lc.DenyExports, c.downlinkExports()...)
	if js := c.JetStream; js != nil && js.Enabled {
		lc.Domain = js.Domain
		// The JetStream engine serves the global account only.
		lc.JetStream = r.Account == "" || r.Account == auth.GlobalAccount
	}
	return lc
}

// DefaultLeafPort is the leafnode port used when leafnodes.listen gives
// only a host.
const DefaultLeafPort = 7422

// DefaultLeafHost is the leafnode listen host when leafnodes.listen gives
// only a port and no client host is known; SetDefaults makes such a
// listener follow the client listener's host instead.
const DefaultLeafHost = "0.0.0.0"

// LeafAuthorizationConfig is the authorization block of leafnodes: what an
// attaching leaf must present. One user and password, one token or one
// nkey (bound to account), or a list of users each bound to its account,
// as in nats-server's leafnodes.authorization.
type LeafAuthorizationConfig struct {
	// User and Password define a single user.
	User     string `yaml:"user,omitempty"`
	Password string `yaml:"password,omitempty"`
	// Token is a shared secret sent as auth_token; it may be a bcrypt hash.
	Token string `yaml:"token,omitempty"`
	// Nkey is a single user public NKey; the leaf signs our nonce.
	Nkey string `yaml:"nkey,omitempty"`
	// Account binds the single user, token or nkey (and leafs without
	// credentials when nothing is configured) to a local account; empty is
	// the global account.
	Account string `yaml:"account,omitempty"`
	// Users lists users (user and password, or nkey), each bound to the
	// account it names.
	Users []UserConfig `yaml:"users,omitempty"`
	// Timeout bounds the wait for CONNECT (default 2s).
	Timeout Duration `yaml:"timeout,omitempty"`
}

// LeafListenAddr returns the listener's "host:port" (port 0 for -1), or
// "" when leafnodes.listen is not set.
func (c *Config) LeafListenAddr() string {
	ln := c.LeafNodes
	if ln == nil || ln.Listen.IsZero() {
		return ""
	}
	host := ln.Listen.Host
	if host == "" {
		host = DefaultLeafHost
	}
	port := DefaultLeafPort
	if ln.Listen.Port != nil {
		port = max(*ln.Listen.Port, 0)
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// LeafAuth converts leafnodes.authorization; nil when absent.
func (c *Config) LeafAuth() *auth.Config {
	la := c.LeafNodes.Authorization
	if la == nil || (la.User == "" && la.Token == "" && la.Nkey == "" && len(la.Users) == 0) {
		return nil
	}
	ac := &auth.Config{Token: la.Token}
	if la.User != "" {
		ac.Users = append(ac.Users, auth.User{Name: la.User, Password: la.Password, Account: la.Account})
	}
	if la.Nkey != "" {
		ac.Users = append(ac.Users, auth.User{Nkey: la.Nkey, Account: la.Account})
	}
	for _, u := range la.Users {
		ac.Users = append(ac.Users, auth.User{Name: u.User, Password: u.Password, Nkey: u.Nkey, Account: u.Account})
	}
	for _, name := range sortedKeys(c.Accounts) {
		ac.Accounts = append(ac.Accounts, auth.Account{Name: name})
	}
	return ac
}

// leafListen validates leafnodes.listen, authorization, tls and
// compression.
func (v *validator) leafListen(ln *LeafNodesConfig) {
	if ln.Listen.IsZero() {
		if ln.Authorization != nil || ln.TLS != nil || ln.Compression != "" {
			v.errf("leafnodes", "authorization, tls and compression configure leafnodes.listen, which is not set")
		}
		return
	}
	if p := ln.Listen.Port; p != nil && (*p < -1 || *p > 65535) {
		v.errf("leafnodes.listen", "port %d out of range (-1 picks a free port)", *p)
	}
	if ln.Compression != "" {
		if _, err := leaf.NormalizeCompression(ln.Compression); err != nil {
			v.errf("leafnodes.compression", "%q is not one of off, accept, s2_auto, s2_uncompressed, s2_fast, s2_better, s2_best", ln.Compression)
		}
	}
	if la := ln.Authorization; la != nil {
		if la.Account != "" {
			if _, ok := v.c.Accounts[la.Account]; !ok && la.Account != auth.GlobalAccount {
				v.errf("leafnodes.authorization.account", "%q is not listed under accounts", la.Account)
			}
		}
		if la.Password != "" && la.User == "" {
			v.errf("leafnodes.authorization.password", "set without user")
		}
		if la.Timeout < 0 {
			v.errf("leafnodes.authorization.timeout", "must not be negative")
		}
		for i, u := range la.Users {
			if u.Permissions != nil {
				v.errf(fmt.Sprintf("leafnodes.authorization.users[%d].permissions", i), "permissions for leaf users are not supported yet")
			}
		}
		if ac := v.c.LeafAuth(); ac != nil {
			if err := ac.Validate(); err != nil {
				v.err("leafnodes.authorization", err)
			}
		}
	}
	if ln.TLS != nil {
		_, problems := v.c.buildTLS("leafnodes.tls", ln.TLS, true)
		v.problems = append(v.problems, problems...)
	}
}
