package app

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nkeys"
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

// tempEnv is an environment whose state directory (the default store
// directory, where JetStream runs by default) is a fresh temporary one,
// for tests that start an App. Its machine has 16GiB of memory, so the
// default limits (12GiB memory, 1TiB file) are never in a test's way.
func tempEnv(t testing.TB) Env {
	t.Helper()
	return Env{StateDirectory: t.TempDir(), Machine: Machine{Memory: 16 << 30}}
}

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

// newUserKey returns a new user NKey's public key and seed.
func newUserKey(t testing.TB) (public, seed string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	require.NoError(t, err)
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	s, err := kp.Seed()
	require.NoError(t, err)
	return pub, string(s)
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
