//go:build linux

package mqtt_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"testing"
	"time"

	pahov3 "github.com/eclipse/paho.mqtt.golang"
	"github.com/leafbox/leafbox/core/mqtt"
	"github.com/leafbox/leafbox/core/require"
)

// testTLS returns a server configuration with a new self-signed
// certificate for 127.0.0.1, and a client configuration that trusts it.
func testTLS(t *testing.T) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "leafbox test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}},
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
}

// Idle TLS clients park too (keeping their TLS state, so attached): a
// parked TLS subscriber gets what a parked TLS publisher sends, round
// after round, QoS 0 and 1, both parking again after each.
func TestParkedTLSClients(t *testing.T) {
	srvTLS, cliTLS := testTLS(t)
	e := newTestEnv(t, nil, func(c *mqtt.Config) { parkQuickly(c); c.TLS = srvTLS })
	tlsOpts := func(o *pahov3.ClientOptions) {
		o.Servers = nil
		o.AddBroker("ssl://" + e.addr)
		o.SetTLSConfig(cliTLS)
	}
	sub := e.v3Client(t, "tls-sub", tlsOpts)
	msgs := v3Sub(t, sub, "tls/#", 1)
	pub := e.v3Client(t, "tls-pub", tlsOpts)
	for round := range 3 {
		waitParked(t, e, 2)
		for _, ci := range e.mqtt.Conns() {
			require.Equal(t, ci.Parked, true, ci.ClientID+" parked")
			require.Equal(t, ci.Attached, true, ci.ClientID+" keeps its TLS connection")
			require.Equal(t, ci.TLSVersion != 0, true, ci.ClientID+" speaks TLS")
		}
		parks := e.mqtt.Stats().Parks
		for i := range 2 {
			tok := pub.Publish("tls/x", byte(i), false, fmt.Sprintf("round %d.%d", round, i))
			require.Equal(t, tok.WaitTimeout(wait), true, "publish in time")
			require.NoError(t, tok.Error())
		}
		for i := range 2 {
			require.Equal(t, string(nextV3(t, msgs).Payload()), fmt.Sprintf("round %d.%d", round, i))
		}
		waitParked(t, e, 2)
		require.Equal(t, e.mqtt.Stats().Parks >= parks+2, true, "parked again after waking")
	}
}
