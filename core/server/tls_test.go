package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

// testPKI makes a CA and a server certificate for 127.0.0.1.
func testPKI(t *testing.T) (*tls.Config, *x509.CertPool) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "leafbox test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "leafbox"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	cfg := &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		MinVersion:   tls.VersionTLS12,
	}
	return cfg, pool
}

func TestTLS(t *testing.T) {
	cfg, pool := testPKI(t)
	s := servertest.Start(t, server.Options{TLS: cfg, TLSRequired: true})
	nc := connect(t, s, nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	sub, _ := nc.SubscribeSync("secure")
	require.NoError(t, nc.Publish("secure", []byte("ok")))
	if m := nextMsg(t, sub); string(m.Data) != "ok" {
		t.Fatalf("got %q", m.Data)
	}
	// A plaintext client is told TLS is required.
	raw := servertest.Dial(t, s)
	if line := raw.Expect("INFO "); !strings.Contains(line, `"tls_required":true`) {
		t.Fatalf("INFO: %s", line)
	}
	raw.Send("CONNECT {}\r\nPING\r\n")
	raw.Expect("-ERR 'Secure Connection - TLS Required'")
	raw.ExpectClosed()
}

func TestTLSClientVerify(t *testing.T) {
	cfg, pool := testPKI(t)
	clientCert := cfg.Certificates[0] // signed by the same CA; fine for a client too
	cfg.ClientCAs = pool
	cfg.ClientAuth = tls.RequireAndVerifyClientCert
	s := servertest.Start(t, server.Options{TLS: cfg, TLSRequired: true, TLSVerify: true})
	nc := connect(t, s, nats.Secure(&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}, MinVersion: tls.VersionTLS12}))
	require.NoError(t, nc.Flush())
	if err := dialErr(s, nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})); err == nil {
		t.Fatal("client without a certificate was accepted")
	}
}

func TestTLSHandshakeFirst(t *testing.T) {
	cfg, pool := testPKI(t)
	s := servertest.Start(t, server.Options{TLS: cfg, TLSRequired: true, TLSHandshakeFirst: true})
	nc := connect(t, s, nats.Secure(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}), nats.TLSHandshakeFirst())
	require.NoError(t, nc.Flush())
}
