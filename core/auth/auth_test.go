package auth_test

import (
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/require"
)

func TestNoAuthConfigured(t *testing.T) {
	a := mustNew(t, auth.Config{})
	require.Equal(t, a.Required(), false)
	require.Equal(t, a.NeedsNonce(), false)
	for _, c := range []auth.Credentials{{}, {User: "x", Pass: "y"}, {Token: "t"}} {
		id := requireAuthorized(t, a, c, "")
		require.Equal(t, id.User, "")
		require.Equal(t, id.Account, auth.GlobalAccount)
		if id.Perms != nil {
			t.Fatalf("anonymous perms = %v, want nil", id.Perms)
		}
	}
}

func TestAccountsOnlyIsNotRequired(t *testing.T) {
	a := mustNew(t, auth.Config{Accounts: []auth.Account{{Name: "A"}}})
	require.Equal(t, a.Required(), false)
	if got, want := a.Accounts(), []string{auth.GlobalAccount, "A"}; !slices.Equal(got, want) {
		t.Fatalf("Accounts() = %v, want %v", got, want)
	}
}

func TestUserPassword(t *testing.T) {
	a := mustNew(t, auth.Config{Users: []auth.User{
		{Name: "plain", Password: "s3cret"},
		{Name: "hashed", Password: mustBcrypt(t, "hunter2")},
		{Name: "nopass"},
	}})
	require.Equal(t, a.Required(), true)
	require.Equal(t, a.NeedsNonce(), false)

	tests := []struct {
		name string
		c    auth.Credentials
		ok   bool
	}{
		{"plain right", auth.Credentials{User: "plain", Pass: "s3cret"}, true},
		{"plain wrong", auth.Credentials{User: "plain", Pass: "s3cre"}, false},
		{"plain longer", auth.Credentials{User: "plain", Pass: "s3cret!"}, false},
		{"plain empty", auth.Credentials{User: "plain"}, false},
		{"bcrypt right", auth.Credentials{User: "hashed", Pass: "hunter2"}, true},
		{"bcrypt wrong", auth.Credentials{User: "hashed", Pass: "hunter3"}, false},
		{"bcrypt hash as password", auth.Credentials{User: "hashed", Pass: mustBcrypt(t, "hunter2")}, false},
		{"user without password", auth.Credentials{User: "nopass"}, true},
		{"user without password, password sent", auth.Credentials{User: "nopass", Pass: "x"}, false},
		{"unknown user", auth.Credentials{User: "nobody", Pass: "s3cret"}, false},
		{"password only", auth.Credentials{Pass: "s3cret"}, false},
		{"token instead", auth.Credentials{Token: "s3cret"}, false},
		{"no credentials", auth.Credentials{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				requireRefused(t, a, tc.c, "")
				return
			}
			id := requireAuthorized(t, a, tc.c, "")
			require.Equal(t, id.User, tc.c.User)
			require.Equal(t, id.Account, auth.GlobalAccount)
		})
	}
}

func TestRefusalReasonHasNoSecret(t *testing.T) {
	a := mustNew(t, auth.Config{Users: []auth.User{{Name: "bob", Password: "right-pass"}}})
	err := requireRefused(t, a, auth.Credentials{User: "bob", Pass: "wrong-pass"}, "")
	require.Equal(t, err.Error(), `auth: authorization violation: wrong password for user "bob"`)
	if strings.Contains(err.Error(), "pass\"") || strings.Contains(err.Error(), "right-pass") || strings.Contains(err.Error(), "wrong-pass") {
		t.Fatalf("error %q leaks a password", err)
	}
}

func TestToken(t *testing.T) {
	for _, tc := range []struct {
		name, configured string
	}{
		{"plain", "tok-123"},
		{"bcrypt", mustBcrypt(t, "tok-123")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := mustNew(t, auth.Config{Token: tc.configured})
			require.Equal(t, a.Required(), true)
			id := requireAuthorized(t, a, auth.Credentials{Token: "tok-123"}, "")
			require.Equal(t, id.Account, auth.GlobalAccount)
			require.Equal(t, id.User, "")
			// nats.go leaf URLs with only a user name send it as user and token.
			requireAuthorized(t, a, auth.Credentials{User: "tok-123", Token: "tok-123"}, "")
			requireRefused(t, a, auth.Credentials{Token: "tok-124"}, "")
			requireRefused(t, a, auth.Credentials{User: "tok-123"}, "")
			requireRefused(t, a, auth.Credentials{Pass: "tok-123"}, "")
			requireRefused(t, a, auth.Credentials{}, "")
		})
	}
}

func TestNkey(t *testing.T) {
	kp, pub := newTestUserKey(t)
	otherKP, otherPub := newTestUserKey(t)
	a := mustNew(t, auth.Config{Users: []auth.User{{Nkey: pub}}})
	require.Equal(t, a.Required(), true)
	require.Equal(t, a.NeedsNonce(), true)

	nonce := auth.NewNonce()
	sig := mustSign(t, kp, nonce)
	accountKP, err := nkeysCreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	accountPub, _ := accountKP.PublicKey()

	tests := []struct {
		name  string
		c     auth.Credentials
		nonce string
		ok    bool
	}{
		{"raw url sig", auth.Credentials{Nkey: pub, Sig: rawURL(sig)}, nonce, true},
		{"std base64 sig", auth.Credentials{Nkey: pub, Sig: base64.StdEncoding.EncodeToString(sig)}, nonce, true},
		{"sig over other nonce", auth.Credentials{Nkey: pub, Sig: rawURL(mustSign(t, kp, auth.NewNonce()))}, nonce, false},
		{"sig by other key", auth.Credentials{Nkey: pub, Sig: rawURL(mustSign(t, otherKP, nonce))}, nonce, false},
		{"tampered sig", auth.Credentials{Nkey: pub, Sig: rawURL(append([]byte{sig[0] ^ 1}, sig[1:]...))}, nonce, false},
		{"truncated sig", auth.Credentials{Nkey: pub, Sig: rawURL(sig[:32])}, nonce, false},
		{"sig not base64", auth.Credentials{Nkey: pub, Sig: "!!!not base64!!!"}, nonce, false},
		{"sig missing", auth.Credentials{Nkey: pub}, nonce, false},
		{"no nonce sent", auth.Credentials{Nkey: pub, Sig: rawURL(mustSign(t, kp, ""))}, "", false},
		{"unknown key", auth.Credentials{Nkey: otherPub, Sig: rawURL(mustSign(t, otherKP, nonce))}, nonce, false},
		{"account key", auth.Credentials{Nkey: accountPub, Sig: rawURL(mustSign(t, accountKP, nonce))}, nonce, false},
		{"malformed key", auth.Credentials{Nkey: "UNOTAKEY", Sig: rawURL(sig)}, nonce, false},
		{"key with wrong case", auth.Credentials{Nkey: strings.ToLower(pub), Sig: rawURL(sig)}, nonce, false},
		{"no credentials", auth.Credentials{}, nonce, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !tc.ok {
				requireRefused(t, a, tc.c, tc.nonce)
				return
			}
			id := requireAuthorized(t, a, tc.c, tc.nonce)
			require.Equal(t, id.User, pub)
			require.Equal(t, id.Account, auth.GlobalAccount)
		})
	}
}

func TestNkeyAndPasswordUsersTogether(t *testing.T) {
	kp, pub := newTestUserKey(t)
	a := mustNew(t, auth.Config{Users: []auth.User{{Nkey: pub}, {Name: "bob", Password: "pw"}}})
	nonce := auth.NewNonce()
	requireAuthorized(t, a, auth.Credentials{Nkey: pub, Sig: rawURL(mustSign(t, kp, nonce))}, nonce)
	id := requireAuthorized(t, a, auth.Credentials{User: "bob", Pass: "pw"}, nonce)
	require.Equal(t, id.User, "bob")
	// A presented nkey selects the nkey path even if a password comes too.
	requireRefused(t, a, auth.Credentials{Nkey: pub, User: "bob", Pass: "pw"}, nonce)
}

func TestNoAuthUser(t *testing.T) {
	kp, pub := newTestUserKey(t)
	users := []auth.User{
		{Name: "default", Password: mustBcrypt(t, "pw"), Account: "A"},
		{Name: "bob", Password: "bobpw"},
		{Nkey: pub, Account: "A"},
	}
	accounts := []auth.Account{{Name: "A"}}

	t.Run("password user", func(t *testing.T) {
		a := mustNew(t, auth.Config{Users: users, Accounts: accounts, NoAuthUser: "default"})
		require.Equal(t, a.Required(), true)
		id := requireAuthorized(t, a, auth.Credentials{}, "")
		require.Equal(t, id.User, "default")
		require.Equal(t, id.Account, "A")
		// Sig or JWT alone are not credentials.
		id = requireAuthorized(t, a, auth.Credentials{Sig: "x", JWT: "y"}, "")
		require.Equal(t, id.User, "default")
		// Presented credentials are checked, never replaced by the default.
		requireRefused(t, a, auth.Credentials{User: "bob", Pass: "nope"}, "")
		requireRefused(t, a, auth.Credentials{Pass: "pw"}, "")
		requireRefused(t, a, auth.Credentials{Token: "pw"}, "")
		id = requireAuthorized(t, a, auth.Credentials{User: "bob", Pass: "bobpw"}, "")
		require.Equal(t, id.User, "bob")
	})
	t.Run("nkey user", func(t *testing.T) {
		a := mustNew(t, auth.Config{Users: users, Accounts: accounts, NoAuthUser: pub})
		nonce := auth.NewNonce()
		id := requireAuthorized(t, a, auth.Credentials{}, nonce)
		require.Equal(t, id.User, pub)
		require.Equal(t, id.Account, "A")
		// Presenting the key itself requires the signature.
		requireRefused(t, a, auth.Credentials{Nkey: pub}, nonce)
		requireAuthorized(t, a, auth.Credentials{Nkey: pub, Sig: rawURL(mustSign(t, kp, nonce))}, nonce)
	})
}

func TestAccountBinding(t *testing.T) {
	_, pub := newTestUserKey(t)
	a := mustNew(t, auth.Config{
		Users: []auth.User{
			{Name: "global", Password: "p"},
			{Name: "explicit-global", Password: "p", Account: auth.GlobalAccount},
			{Name: "bound", Password: "p", Account: "B"},
		},
		Accounts: []auth.Account{
			{Name: "A", Users: []auth.User{
				{Name: "listed", Password: "p"},
				{Name: "listed-same", Password: "p", Account: "A"},
				{Nkey: pub},
			}},
			{Name: "B"},
		},
	})
	if got, want := a.Accounts(), []string{auth.GlobalAccount, "A", "B"}; !slices.Equal(got, want) {
		t.Fatalf("Accounts() = %v, want %v", got, want)
	}
	got := a.Accounts()
	got[0] = "mutated"
	require.Equal(t, a.Accounts()[0], auth.GlobalAccount)

	for user, want := range map[string]string{
		"global": auth.GlobalAccount, "explicit-global": auth.GlobalAccount,
		"bound": "B", "listed": "A", "listed-same": "A",
	} {
		id := requireAuthorized(t, a, auth.Credentials{User: user, Pass: "p"}, "")
		if id.Account != want {
			t.Errorf("user %q bound to %q, want %q", user, id.Account, want)
		}
	}
	require.Equal(t, a.NeedsNonce(), true)
}

func TestGlobalAccountListedExplicitly(t *testing.T) {
	a := mustNew(t, auth.Config{Accounts: []auth.Account{
		{Name: "A"},
		{Name: auth.GlobalAccount, Users: []auth.User{{Name: "u", Password: "p"}}},
	}})
	if got, want := a.Accounts(), []string{auth.GlobalAccount, "A"}; !slices.Equal(got, want) {
		t.Fatalf("Accounts() = %v, want %v", got, want)
	}
	id := requireAuthorized(t, a, auth.Credentials{User: "u", Pass: "p"}, "")
	require.Equal(t, id.Account, auth.GlobalAccount)
}

func TestIdentitiesShareCompiledPerms(t *testing.T) {
	a := mustNew(t, auth.Config{Users: []auth.User{
		{Name: "u", Password: "p", Permissions: &auth.Permissions{Publish: &auth.SubjectPermission{Allow: []string{"a"}}}},
		{Name: "open", Password: "p", Permissions: &auth.Permissions{Publish: &auth.SubjectPermission{}}},
	}})
	id1 := requireAuthorized(t, a, auth.Credentials{User: "u", Pass: "p"}, "")
	id2 := requireAuthorized(t, a, auth.Credentials{User: "u", Pass: "p"}, "")
	if id1 == id2 {
		t.Fatal("Authenticate returned the same Identity twice; each caller must own its own")
	}
	if id1.Perms == nil || id1.Perms != id2.Perms {
		t.Fatal("connections of one user must share one compiled Perms")
	}
	// Permissions that restrict nothing compile to nil.
	if id := requireAuthorized(t, a, auth.Credentials{User: "open", Pass: "p"}, ""); id.Perms != nil {
		t.Fatal("unrestricted permissions should compile to nil Perms")
	}
}

func TestNewNonce(t *testing.T) {
	seen := make(map[string]bool)
	for range 100 {
		n := auth.NewNonce()
		require.Equal(t, len(n), 15)
		raw, err := base64.RawURLEncoding.DecodeString(n)
		if err != nil {
			t.Fatalf("nonce %q is not raw base64url: %v", n, err)
		}
		require.Equal(t, len(raw), 11)
		if seen[n] {
			t.Fatalf("nonce %q repeated", n)
		}
		seen[n] = true
	}
}

func TestIsBcrypt(t *testing.T) {
	for s, want := range map[string]bool{
		mustBcrypt(t, "x"):   true,
		"$2a$10$abc":         true,
		"$2b$04$":            true,
		"$2x$12$whatever":    true,
		"$2y$31$z":           true,
		"$2c$10$abc":         false,
		"$2a$1$abc":          false,
		"$2a$ab$abc":         false,
		"$2a$10abc":          false,
		"2a$10$abc":          false,
		"$3a$10$abc":         false,
		"$2a$10":             false,
		"":                   false,
		"plain-password":     false,
		"$argon2id$v=19$m=1": false,
	} {
		if got := auth.IsBcrypt(s); got != want {
			t.Errorf("IsBcrypt(%q) = %v, want %v", s, got, want)
		}
	}
}
