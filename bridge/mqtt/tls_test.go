package mqtt

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge"
)

// writeTestCert writes a self-signed certificate for 127.0.0.1 and its
// key to dir, and returns a pool trusting it.
func writeTestCert(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mosquitto test"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	for name, data := range map[string][]byte{"cert.pem": certPEM, "key.pem": pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(certPEM)
	return pool
}

// TestTLSAndPassword: a bridge reaches a Mosquitto that takes only TLS and
// a user name with its password; a wrong password ends Run with a
// RefusedError, without the password in it.
func TestTLSAndPassword(t *testing.T) {
	dir := t.TempDir()
	pool := writeTestCert(t, dir)
	passwd := filepath.Join(dir, "passwd")
	if out, err := exec.Command("mosquitto_passwd", "-b", "-c", passwd, "leafbox", "s3cret").CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd: %v\n%s", err, out)
	}
	m := startMosquitto(t, "cafile "+filepath.Join(dir, "cert.pem"), "certfile "+filepath.Join(dir, "cert.pem"),
		"keyfile "+filepath.Join(dir, "key.pem"), "allow_anonymous false", "password_file "+passwd)
	for _, v := range []Version{V5, V311} {
		t.Run("v"+v.String(), func(t *testing.T) {
			b := newTestBroker(t)
			ch := mustSubscribe(t, b.nc, "secure.>")
			cfg := testConfig(m, v, "tls")
			cfg.Server = "tls://" + m.addr()
			cfg.TLS = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
			cfg.Username, cfg.Password = "leafbox", []byte("s3cret")
			cfg.Inbound = []InboundRoute{{From: "secure/#", To: "secure.", QoS: 1}}
			runBridge(t, cfg, b.bus)
			mosquittoPubTLS(t, m, dir, "-t", "secure/door", "-m", "open")
			if msg := nextMsg(t, ch); msg.Subject != "secure.secure.door" || string(msg.Data) != "open" {
				t.Fatalf("got %q %q", msg.Subject, msg.Data)
			}

			cfg.ClientID += "-wrong"
			cfg.Password = []byte("wrong-password")
			br, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = br.Run(ctx, bridge.Env{Bus: b.bus, Status: &bridge.Status{}, Logger: newTestLogger(t)})
			var refused *RefusedError
			if !errors.As(err, &refused) || !strings.Contains(err.Error(), "bad user name or password") && !strings.Contains(err.Error(), "not authorized") {
				t.Fatalf("Run with a wrong password = %v, want a RefusedError", err)
			}
			if strings.Contains(err.Error(), "wrong-password") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

// mosquittoPubTLS runs mosquitto_pub over TLS as the test's user.
func mosquittoPubTLS(t *testing.T, m *mosquitto, dir string, args ...string) {
	t.Helper()
	args = append([]string{"-h", "127.0.0.1", "-p", m.addr()[strings.LastIndexByte(m.addr(), ':')+1:], "--cafile", filepath.Join(dir, "cert.pem"),
		"-u", "leafbox", "-P", "s3cret", "-q", "1"}, args...)
	if out, err := exec.Command("mosquitto_pub", args...).CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_pub %v: %v\n%s", args, err, out)
	}
}
