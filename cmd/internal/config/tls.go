package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

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

// ServerTLS loads the files of a server-side tls block (tls,
// leafnodes.tls) at path: a certificate is required and verify asks
// clients for theirs. Problems come as an *Error naming path's keys.
func (c *Config) ServerTLS(path string, t *TLSConfig) (*tls.Config, error) {
	tc, problems := c.buildTLS(path, t, true)
	if len(problems) > 0 {
		return nil, newConfigError(problems)
	}
	return tc, nil
}

// RemoteTLS loads the files of a leafnode remote's tls block at path, the
// client side: the CA file verifies the hub.
func (c *Config) RemoteTLS(path string, t *RemoteTLSConfig) (*tls.Config, error) {
	tc, problems := c.buildTLS(path, t.tlsConfig(), false)
	if len(problems) > 0 {
		return nil, newConfigError(problems)
	}
	return tc, nil
}
