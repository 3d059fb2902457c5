package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// mustParse parses src or fails the test.
func mustParse(t testing.TB, src string) *Config {
	t.Helper()
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("parse:\n%s\nerror: %v", src, err)
	}
	return c
}

// testEnv is a fixed environment, so tests never depend on the real one.
var testEnv = Env{Home: "/home/test"}

// mustValidate parses src, fills defaults and validates, or fails.
func mustValidate(t testing.TB, src string) *Config {
	t.Helper()
	c := mustParse(t, src)
	c.SetDefaults(testEnv)
	require.NoError(t, c.Validate())
	return c
}

// validateErr parses src, fills defaults and returns Validate's error.
func validateErr(t testing.TB, src string) error {
	t.Helper()
	c := mustParse(t, src)
	c.SetDefaults(testEnv)
	return c.Validate()
}

// problems returns the FieldErrors of a *Error.
func problems(t testing.TB, err error) []*FieldError {
	t.Helper()
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want a *Error, got %T: %v", err, err)
	}
	return ce.Problems
}

// exported returns c without its unexported bookkeeping, for comparisons.
func exported(c *Config) Config {
	out := *c
	out.file, out.dir, out.index, out.flags, out.storageNotes, out.hash = "", "", nil, nil, nil, ""
	return out
}

func ptr[T any](v T) *T { return &v }

// writeFile writes data to dir/name and returns the path.
func writeFile(t testing.TB, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(data), 0o600))
	return path
}

// writeCert writes a self-signed CA certificate and its key as PEM files
// cert.pem and key.pem in dir.
func writeCert(t testing.TB, dir string) (certPath, keyPath string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "leafbox test"},
		DNSNames:              []string{"localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	certPath = writeFile(t, dir, "cert.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	keyPath = writeFile(t, dir, "key.pem", string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})))
	return certPath, keyPath
}

// writeSeed writes a new user NKey seed to dir/name and returns the public
// key.
func writeSeed(t testing.TB, dir, name string) (public string) {
	t.Helper()
	pub, seed := newUserKey(t)
	require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o700))
	writeFile(t, dir, name, seed+"\n")
	return pub
}

// loopbackConfig parses src as a gateway config listening on 127.0.0.1 on
// free ports and fills its defaults from env.
func loopbackConfig(t testing.TB, src string, env Env) *Config {
	t.Helper()
	c := mustParse(t, src)
	Overrides{Host: ptr("127.0.0.1"), Port: ptr(-1)}.Apply(c)
	if c.HTTPPort == nil && c.HTTP.Port == nil {
		c.HTTPPort = ptr(-1)
	}
	if ln := c.LeafNodes; ln != nil && ln.Listen.Port == nil && ln.Listen.Host != "" {
		ln.Listen.Port = ptr(-1)
	}
	c.SetDefaults(env)
	return c
}
