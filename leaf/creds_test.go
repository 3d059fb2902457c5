package leaf_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// The .creds test runs the hub in operator mode. The JWTs are built here
// by hand (header.claims.signature, Ed25519 over the first two parts)
// because the jwt library is not a dependency of this module.

// signJWT encodes claims as a NATS v2 JWT signed by issuer.
func signJWT(t *testing.T, issuer nkeys.KeyPair, claims map[string]any) string {
	t.Helper()
	iss, err := issuer.PublicKey()
	require.NoError(t, err)
	claims["iss"] = iss
	claims["iat"] = time.Now().Unix()
	claims["jti"] = fmt.Sprintf("J%d", time.Now().UnixNano())
	body, err := json.Marshal(claims)
	require.NoError(t, err)
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"typ":"JWT","alg":"ed25519-nkey"}`)) + "." + enc.EncodeToString(body)
	sig, err := issuer.Sign([]byte(head))
	require.NoError(t, err)
	return head + "." + enc.EncodeToString(sig)
}

func publicKey(t *testing.T, kp nkeys.KeyPair) string {
	t.Helper()
	pub, err := kp.PublicKey()
	require.NoError(t, err)
	return pub
}

// operatorSetup is an operator, one account and the hub configuration
// that trusts them.
type operatorSetup struct {
	account nkeys.KeyPair
	config  string
}

func newOperatorSetup(t *testing.T) operatorSetup {
	t.Helper()
	op, err := nkeys.CreateOperator()
	require.NoError(t, err)
	acc, err := nkeys.CreateAccount()
	require.NoError(t, err)
	sys, err := nkeys.CreateAccount()
	require.NoError(t, err)
	unlimited := map[string]any{"subs": -1, "data": -1, "payload": -1, "imports": -1, "exports": -1,
		"wildcards": true, "conn": -1, "leaf": -1}
	opJWT := signJWT(t, op, map[string]any{"sub": publicKey(t, op), "name": "op",
		"nats": map[string]any{"type": "operator", "version": 2, "system_account": publicKey(t, sys)}})
	accJWT := signJWT(t, op, map[string]any{"sub": publicKey(t, acc), "name": "acc",
		"nats": map[string]any{"type": "account", "version": 2, "limits": unlimited}})
	sysJWT := signJWT(t, op, map[string]any{"sub": publicKey(t, sys), "name": "sys",
		"nats": map[string]any{"type": "account", "version": 2, "limits": unlimited}})
	config := fmt.Sprintf("operator: %q\nsystem_account: %q\nresolver: MEMORY\nresolver_preload: {\n  %s: %q\n  %s: %q\n}\n",
		opJWT, publicKey(t, sys), publicKey(t, acc), accJWT, publicKey(t, sys), sysJWT)
	return operatorSetup{account: acc, config: config}
}

// userCreds writes a .creds file for a new user of the account, signed by
// signer (the account key for a valid user).
func (o operatorSetup) userCreds(t *testing.T, signer nkeys.KeyPair) string {
	t.Helper()
	user, err := nkeys.CreateUser()
	require.NoError(t, err)
	userJWT := signJWT(t, signer, map[string]any{"sub": publicKey(t, user), "name": "gw",
		"nats": map[string]any{"type": "user", "version": 2, "subs": -1, "data": -1, "payload": -1}})
	seed, err := user.Seed()
	require.NoError(t, err)
	creds := fmt.Sprintf("-----BEGIN NATS USER JWT-----\n%s\n------END NATS USER JWT------\n\n"+
		"************************* IMPORTANT *************************\n"+
		"NKEY Seed printed below can be used to sign and prove identity.\n\n"+
		"-----BEGIN USER NKEY SEED-----\n%s\n------END USER NKEY SEED------\n", userJWT, seed)
	path := filepath.Join(t.TempDir(), "user.creds")
	require.NoError(t, os.WriteFile(path, []byte(creds), 0o600))
	return path
}

func TestCredentialsAuth(t *testing.T) {
	setup := newOperatorSetup(t)
	hub := leaftest.StartHub(t, leaftest.HubOptions{Config: setup.config})
	creds := setup.userCreds(t, setup.account)

	cfg := testConfig(hub.LeafURL())
	cfg.Credentials = creds
	g := startGateway(t, cfg)
	if st := g.link.Status(); st.RemoteAccount != publicKey(t, setup.account) {
		t.Fatalf("bound to hub account %q", st.RemoteAccount)
	}
	gw := connect(t, g.clientURL())
	hc := connect(t, hub.ClientURL(), nats.UserCredentials(creds))
	up, _ := hc.SubscribeSync("creds.up")
	down, _ := gw.SubscribeSync("creds.down")
	g.flush(t, gw, hc)
	require.NoError(t, gw.Publish("creds.up", []byte("u")))
	require.NoError(t, hc.Publish("creds.down", []byte("d")))
	next(t, up)
	next(t, down)

	// A user signed by a key the hub does not trust is refused.
	rogue, err := nkeys.CreateAccount()
	require.NoError(t, err)
	cfg = testConfig(hub.LeafURL())
	cfg.Credentials = setup.userCreds(t, rogue)
	bad := startGatewayNoWait(t, cfg)
	bad.waitFor(t, "an authorization error", func(st leaf.Status) bool {
		return strings.Contains(st.LastError, "Authorization Violation") && !st.RetryAt.IsZero()
	})
	if st := bad.link.Status(); st.Connects != 0 {
		t.Fatalf("rogue credentials connected: %+v", st)
	}
}

func TestBadCredentialFiles(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.creds")
	require.NoError(t, os.WriteFile(garbage, []byte("not a creds file"), 0o600))
	for name, cfg := range map[string]leaf.Config{
		"missing creds": {Credentials: filepath.Join(dir, "nope.creds")},
		"garbage creds": {Credentials: garbage},
		"missing seed":  {NkeySeedFile: filepath.Join(dir, "nope.nk")},
		"garbage seed":  {NkeySeedFile: garbage},
	} {
		cfg.URLs = []string{"nats-leaf://127.0.0.1:1"}
		if _, err := leaf.New(cfg, newServerLocal(nil), nil); err == nil {
			t.Errorf("%s: New accepted it", name)
		}
	}
}
