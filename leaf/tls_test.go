package leaf_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// newServerCert writes a self-signed certificate for 127.0.0.1 and
// returns the file paths and a pool that trusts it.
func newServerCert(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "leaf test hub"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestTLSToHub(t *testing.T) {
	certFile, keyFile, pool := newServerCert(t)
	hub := leaftest.StartHub(t, leaftest.HubOptions{
		Leaf: fmt.Sprintf("tls { cert_file: %q, key_file: %q }", certFile, keyFile),
	})

	// The hub requires TLS (tls_required in its INFO): the link upgrades
	// after the INFO and verifies the hub with the configured roots.
	cfg := testConfig(hub.LeafURL())
	cfg.TLS = &tls.Config{RootCAs: pool}
	g := startGateway(t, cfg)
	gw := connect(t, g.clientURL())
	hc := connect(t, hub.ClientURL())
	up, _ := hc.SubscribeSync("tls.up")
	g.flush(t, hc)
	require.NoError(t, gw.Publish("tls.up", []byte("secure")))
	if m := next(t, up); string(m.Data) != "secure" {
		t.Fatalf("got %q", m.Data)
	}

	// Without the roots the hub's certificate is not trusted.
	untrusted := startGatewayNoWait(t, testConfig(hub.LeafURL()))
	untrusted.waitFor(t, "a certificate error", func(st leaf.Status) bool {
		return strings.Contains(st.LastError, "certificate")
	})
}
