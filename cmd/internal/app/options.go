package app

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/server"
)

// ServerOptions validates c (Validate, which includes the auth package's
// own validation of the resulting auth.Config) and builds the broker's
// options from it: auth configuration, TLS configuration and limits. Call SetDefaults first. The
// returned options have no Logger; the App sets it.
func (c *Config) ServerOptions() (server.Options, error) {
	if err := c.Validate(); err != nil {
		return server.Options{}, err
	}
	opts := server.Options{
		ServerName:          c.ServerName,
		Host:                c.Listen.Host,
		Port:                c.Port,
		MaxPayload:          int32(c.MaxPayload),
		MaxControlLine:      int32(c.MaxControlLine),
		MaxPending:          int64(c.MaxPending),
		MaxConnections:      c.MaxConnections,
		MaxSubs:             c.MaxSubscriptions,
		PingInterval:        time.Duration(c.PingInterval),
		MaxPingsOut:         c.PingMax,
		WriteDeadline:       time.Duration(c.WriteDeadline),
		LameDuckDuration:    time.Duration(c.LameDuckDuration),
		LameDuckGracePeriod: time.Duration(c.LameDuckGracePeriod),
		Auth:                c.authConfig(),
	}
	if js := c.JetStream; js != nil && js.Enabled {
		opts.JetStream = true
		opts.JetStreamDomain = js.Domain
	}
	if a := c.Authorization; a != nil {
		opts.AuthTimeout = time.Duration(a.Timeout)
	}
	if t := c.TLS; t != nil {
		tc, problems := c.buildTLS("tls", t, true)
		if len(problems) > 0 {
			return server.Options{}, newConfigError(problems)
		}
		opts.TLS = tc
		opts.TLSRequired = true
		opts.TLSVerify = t.Verify
		opts.TLSHandshakeFirst = t.HandshakeFirst
		opts.TLSTimeout = time.Duration(t.Timeout)
	}
	return opts, nil
}

// authConfig converts authorization, accounts and no_auth_user; nil when
// none is configured, which means no authentication.
func (c *Config) authConfig() *auth.Config {
	ac := &auth.Config{NoAuthUser: c.NoAuthUser}
	if a := c.Authorization; a != nil {
		ac.Token = a.Token
		if a.User != "" {
			ac.Users = append(ac.Users, auth.User{Name: a.User, Password: a.Password})
		}
		for _, u := range a.Users {
			ac.Users = append(ac.Users, u.authUser())
		}
	}
	for _, name := range sortedKeys(c.Accounts) {
		acc := auth.Account{Name: name}
		for _, u := range c.Accounts[name].Users {
			acc.Users = append(acc.Users, u.authUser())
		}
		ac.Accounts = append(ac.Accounts, acc)
	}
	if ac.Token == "" && len(ac.Users) == 0 && len(ac.Accounts) == 0 && ac.NoAuthUser == "" {
		return nil
	}
	return ac
}

func (u UserConfig) authUser() auth.User {
	au := auth.User{Name: u.User, Password: u.Password, Nkey: u.Nkey, Account: u.Account}
	if p := u.Permissions; p != nil {
		au.Permissions = &auth.Permissions{
			Publish:   p.Publish.authPermission(),
			Subscribe: p.Subscribe.authPermission(),
		}
		if r := p.AllowResponses; r != nil && r.Enabled {
			au.Permissions.Response = &auth.ResponsePermission{MaxMsgs: r.Max, Expires: time.Duration(r.Expires)}
		}
	}
	return au
}

func (p *SubjectPermission) authPermission() *auth.SubjectPermission {
	if p == nil {
		return nil
	}
	return &auth.SubjectPermission{Allow: append([]string(nil), p.Allow...), Deny: append([]string(nil), p.Deny...)}
}

// buildTLS loads the files of a tls block at path. serverSide requires a
// certificate and applies verify as client-certificate verification; for a
// client (a leafnode remote) the CA file verifies the hub instead.
func (c *Config) buildTLS(path string, t *TLSConfig, serverSide bool) (*tls.Config, []*FieldError) {
	var problems []*FieldError
	bad := func(key string, err error) {
		problems = append(problems, c.fieldErr(path+key, err))
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case t.CertFile == "" && t.KeyFile == "" && serverSide:
		bad(".cert_file", errors.New("missing: a server certificate is required"))
	case t.CertFile == "" && t.KeyFile != "":
		bad(".cert_file", errors.New("missing (key_file is set)"))
	case t.CertFile != "" && t.KeyFile == "":
		bad(".key_file", errors.New("missing (cert_file is set)"))
	case t.CertFile != "":
		certPEM, err := os.ReadFile(c.Path(t.CertFile))
		if err != nil {
			bad(".cert_file", err)
		}
		keyPEM, kerr := os.ReadFile(c.Path(t.KeyFile))
		if kerr != nil {
			bad(".key_file", kerr)
		}
		if err == nil && kerr == nil {
			cert, err := tls.X509KeyPair(certPEM, keyPEM)
			if err != nil {
				bad("", fmt.Errorf("cert_file and key_file: %v", err))
			}
			tc.Certificates = []tls.Certificate{cert}
		}
	}
	var pool *x509.CertPool
	if t.CAFile != "" {
		caPEM, err := os.ReadFile(c.Path(t.CAFile))
		if err != nil {
			bad(".ca_file", err)
		} else {
			pool = x509.NewCertPool()
			if !pool.AppendCertsFromPEM(caPEM) {
				bad(".ca_file", fmt.Errorf("no PEM certificates found in %s", t.CAFile))
			}
		}
	}
	if serverSide {
		tc.ClientCAs = pool
		if t.Verify {
			// With no ca_file, client certificates are verified against the
			// system roots, as in nats-server.
			tc.ClientAuth = tls.RequireAndVerifyClientCert
		}
	} else {
		tc.RootCAs = pool
	}
	if t.Timeout < 0 {
		bad(".timeout", errors.New("must not be negative"))
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return tc, nil
}
