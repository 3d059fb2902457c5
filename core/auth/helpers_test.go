package auth_test

import (
	"encoding/base64"
	"errors"
	"testing"

	"github.com/nats-io/nkeys"
	"golang.org/x/crypto/bcrypt"

	"github.com/leafbox/leafbox/core/auth"
)

// mustNew builds an Authenticator or fails the test.
func mustNew(t *testing.T, cfg auth.Config) *auth.Authenticator {
	t.Helper()
	a, err := auth.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

// newTestUserKey returns a fresh user key pair and its public key.
func newTestUserKey(t *testing.T) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatalf("PublicKey: %v", err)
	}
	return kp, pub
}

// mustSign signs nonce's bytes with kp and returns the raw signature.
func mustSign(t *testing.T, kp nkeys.KeyPair, nonce string) []byte {
	t.Helper()
	sig, err := kp.Sign([]byte(nonce))
	if err != nil {
		t.Fatalf("Sign: %v", err)
	}
	return sig
}

// rawURL encodes b the way nats.go sends signatures.
func rawURL(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// mustBcrypt hashes secret at the lowest cost.
func mustBcrypt(t *testing.T, secret string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(secret), bcrypt.MinCost)
	if err != nil {
		t.Fatalf("bcrypt: %v", err)
	}
	return string(h)
}

func requireAuthorized(t *testing.T, a *auth.Authenticator, c auth.Credentials, nonce string) *auth.Identity {
	t.Helper()
	id, err := a.Authenticate(c, nonce)
	if err != nil {
		t.Fatalf("Authenticate(%v): %v", c, err)
	}
	if id == nil {
		t.Fatalf("Authenticate(%v): nil identity", c)
	}
	return id
}

func requireRefused(t *testing.T, a *auth.Authenticator, c auth.Credentials, nonce string) error {
	t.Helper()
	id, err := a.Authenticate(c, nonce)
	if !errors.Is(err, auth.ErrAuthorization) {
		t.Fatalf("Authenticate(%v) = %v, %v; want ErrAuthorization", c, id, err)
	}
	if id != nil {
		t.Fatalf("Authenticate(%v) returned identity %+v with error", c, id)
	}
	return err
}

// nkeysCreateAccount creates an account key pair, for tests that present a
// key of the wrong role.
func nkeysCreateAccount() (nkeys.KeyPair, error) { return nkeys.CreateAccount() }
