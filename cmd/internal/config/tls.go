package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLSConfig is a tls block: the server's certificate and, optionally, the
// CAs that client certificates must chain to.
type TLSConfig struct {
	// CertFile and KeyFile are PEM files with the certificate chain and its
	// private key.
	CertFile string `yaml:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file,omitempty"`
	// CAFile is a PEM file of CA certificates to verify peers with.
	CAFile string `yaml:"ca_file,omitempty"`
	// Verify requires clients to present a certificate signed by CAFile.
	Verify bool `yaml:"verify,omitempty"`
	// HandshakeFirst performs the TLS handshake before the server's INFO.
	HandshakeFirst bool `yaml:"handshake_first,omitempty"`
	// Timeout bounds the handshake (default 2s).
	Timeout Duration `yaml:"timeout,omitempty"`
}

// RemoteTLSConfig is the tls block of a leafnode remote: the client side
// of TLS. The hub's certificate is always verified, against CAFile or
// else the system roots.
type RemoteTLSConfig struct {
	// CAFile is a PEM file of CA certificates to verify the hub with.
	CAFile string `yaml:"ca_file,omitempty"`
	// CertFile and KeyFile are the client certificate and its key, for a
	// hub that verifies its leaf nodes.
	CertFile string `yaml:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file,omitempty"`
}

// tlsConfig returns t as a TLSConfig, the form buildTLS reads.
func (t *RemoteTLSConfig) tlsConfig() *TLSConfig {
	return &TLSConfig{CAFile: t.CAFile, CertFile: t.CertFile, KeyFile: t.KeyFile}
}

// RemoteTLSFiles returns the tls block of r with its paths resolved, or
// nil.
func (c *Config) RemoteTLSFiles(r *RemoteConfig) *RemoteTLSConfig {
	if r.TLS == nil {
		return nil
	}
	return &RemoteTLSConfig{CAFile: c.Path(r.TLS.CAFile), CertFile: c.Path(r.TLS.CertFile), KeyFile: c.Path(r.TLS.KeyFile)}
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

// ServerTLS loads the files of a server-side tls block (tls,
// leafnodes.tls) at path: a certificate is required and verify asks
// clients for theirs. Problems come as an *Error naming path's keys.
func (c *Config) ServerTLS(path string, t *TLSConfig) (*tls.Config, error) {
	tc, problems := c.buildTLS(path, t, true)
	if len(problems) > 0 {
		return nil, newError(problems)
	}
	return tc, nil
}

// RemoteTLS loads the files of a leafnode remote's tls block at path, the
// client side: the CA file verifies the hub.
func (c *Config) RemoteTLS(path string, t *RemoteTLSConfig) (*tls.Config, error) {
	tc, problems := c.buildTLS(path, t.tlsConfig(), false)
	if len(problems) > 0 {
		return nil, newError(problems)
	}
	return tc, nil
}
