package auth_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/require"
)

func TestNewValidation(t *testing.T) {
	_, pub := newTestUserKey(t)
	seedKP, _ := newTestUserKey(t)
	seed, err := seedKP.Seed()
	if err != nil {
		t.Fatal(err)
	}
	accountKP, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	accountPub, _ := accountKP.PublicKey()
	// Changing the last character changes the CRC16 bits it encodes.
	badChecksum := pub[:len(pub)-1] + "A"
	if pub[len(pub)-1] == 'A' {
		badChecksum = pub[:len(pub)-1] + "B"
	}

	withPerms := func(p *auth.Permissions) []auth.User {
		return []auth.User{{Name: "bob", Password: "pw", Permissions: p}}
	}
	pubPerm := func(allow, deny []string) *auth.Permissions {
		return &auth.Permissions{Publish: &auth.SubjectPermission{Allow: allow, Deny: deny}}
	}
	subPerm := func(allow, deny []string) *auth.Permissions {
		return &auth.Permissions{Subscribe: &auth.SubjectPermission{Allow: allow, Deny: deny}}
	}

	tests := []struct {
		name string
		cfg  auth.Config
		want string // after "auth: invalid config: "
	}{
		{"token with users",
			auth.Config{Token: "t", Users: []auth.User{{Name: "u"}}},
			"token cannot be combined with users"},
		{"token with account users",
			auth.Config{Token: "t", Accounts: []auth.Account{{Name: "A", Users: []auth.User{{Name: "u"}}}}},
			"token cannot be combined with users"},
		{"malformed bcrypt token",
			auth.Config{Token: "$2a$10$short"},
			"token looks like a bcrypt hash but is not one: crypto/bcrypt: hashedSecret too short to be a bcrypted password"},
		{"malformed bcrypt password",
			auth.Config{Users: []auth.User{{Name: "bob", Password: "$2b$04$short"}}},
			`user "bob": password looks like a bcrypt hash but is not one: crypto/bcrypt: hashedSecret too short to be a bcrypted password`},
		{"user without name or nkey",
			auth.Config{Users: []auth.User{{Name: "a"}, {Password: "pw"}}},
			"users[1]: user has neither a name nor an nkey"},
		{"account user without name or nkey",
			auth.Config{Accounts: []auth.Account{{Name: "A", Users: []auth.User{{}}}}},
			`account "A" users[0]: user has neither a name nor an nkey`},
		{"nkey user with name",
			auth.Config{Users: []auth.User{{Name: "bob", Nkey: pub}}},
			"users[0]: nkey users take no name or password"},
		{"nkey user with password",
			auth.Config{Users: []auth.User{{Nkey: pub, Password: "pw"}}},
			"users[0]: nkey users take no name or password"},
		{"nkey is a seed",
			auth.Config{Users: []auth.User{{Nkey: string(seed)}}},
			"users[0]: nkey is a seed, not a public key; configure the public key"},
		{"nkey of an account",
			auth.Config{Users: []auth.User{{Nkey: accountPub}}},
			"users[0]: nkey is not a user public key (must start with 'U')"},
		{"nkey garbage",
			auth.Config{Users: []auth.User{{Nkey: "UABC"}}},
			"users[0]: nkey is not a valid public key"},
		{"nkey bad checksum",
			auth.Config{Users: []auth.User{{Nkey: badChecksum}}},
			"users[0]: nkey is not a valid public key"},
		{"duplicate user",
			auth.Config{Users: []auth.User{{Name: "bob"}, {Name: "bob", Password: "x"}}},
			`duplicate user "bob"`},
		{"duplicate user across accounts",
			auth.Config{Users: []auth.User{{Name: "bob"}}, Accounts: []auth.Account{{Name: "A", Users: []auth.User{{Name: "bob"}}}}},
			`duplicate user "bob"`},
		{"duplicate nkey",
			auth.Config{Users: []auth.User{{Nkey: pub}}, Accounts: []auth.Account{{Name: "A", Users: []auth.User{{Nkey: pub}}}}},
			`duplicate nkey "` + pub + `"`},
		{"unknown account",
			auth.Config{Users: []auth.User{{Name: "bob", Account: "X"}}, Accounts: []auth.Account{{Name: "A"}}},
			`user "bob": unknown account "X"`},
		{"nkey user unknown account",
			auth.Config{Users: []auth.User{{Nkey: pub, Account: "X"}}},
			`nkey user "` + pub + `": unknown account "X"`},
		{"listed in one account, bound to another",
			auth.Config{Accounts: []auth.Account{{Name: "A", Users: []auth.User{{Name: "bob", Account: "B"}}}, {Name: "B"}}},
			`user "bob": listed in account "A" but bound to account "B"`},
		{"empty account name",
			auth.Config{Accounts: []auth.Account{{Name: "A"}, {}}},
			"accounts[1]: empty account name"},
		{"duplicate account",
			auth.Config{Accounts: []auth.Account{{Name: "A"}, {Name: "A"}}},
			`duplicate account "A"`},
		{"account name with space",
			auth.Config{Accounts: []auth.Account{{Name: "my acc"}}},
			`account "my acc": name contains whitespace`},
		{"no auth user without users",
			auth.Config{NoAuthUser: "bob"},
			`NoAuthUser "bob" set but no users are configured`},
		{"no auth user with token only",
			auth.Config{Token: "t", NoAuthUser: "bob"},
			`NoAuthUser "bob" set but no users are configured`},
		{"no auth user unknown",
			auth.Config{Users: []auth.User{{Name: "alice"}}, NoAuthUser: "bob"},
			`NoAuthUser "bob" is not a configured user name or nkey`},
		{"publish allow invalid",
			auth.Config{Users: withPerms(pubPerm([]string{"ok", "foo..bar"}, nil))},
			`user "bob": publish allow: invalid subject "foo..bar"`},
		{"publish deny invalid",
			auth.Config{Users: withPerms(pubPerm(nil, []string{"foo.>.bar"}))},
			`user "bob": publish deny: invalid subject "foo.>.bar"`},
		{"publish allow empty subject",
			auth.Config{Users: withPerms(pubPerm([]string{""}, nil))},
			`user "bob": publish allow: invalid subject ""`},
		{"publish allow with queue",
			auth.Config{Users: withPerms(pubPerm([]string{"foo q"}, nil))},
			`user "bob": publish allow: queue group not allowed in publish permission "foo q"`},
		{"publish deny with queue",
			auth.Config{Users: withPerms(pubPerm(nil, []string{"foo.> q"}))},
			`user "bob": publish deny: queue group not allowed in publish permission "foo.> q"`},
		{"subscribe allow three fields",
			auth.Config{Users: withPerms(subPerm([]string{"foo bar baz"}, nil))},
			`user "bob": subscribe allow: invalid subject "foo bar baz"`},
		{"subscribe allow invalid subject",
			auth.Config{Users: withPerms(subPerm([]string{"a.>.b"}, nil))},
			`user "bob": subscribe allow: invalid subject "a.>.b"`},
		{"subscribe allow padded subject",
			auth.Config{Users: withPerms(subPerm([]string{" foo "}, nil))},
			`user "bob": subscribe allow: invalid subject " foo "`},
		{"subscribe deny invalid subject in queue entry",
			auth.Config{Users: withPerms(subPerm(nil, []string{"foo..x q"}))},
			`user "bob": subscribe deny: invalid subject "foo..x" in "foo..x q"`},
		{"subscribe allow invalid queue",
			auth.Config{Users: withPerms(subPerm([]string{"foo q..x"}, nil))},
			`user "bob": subscribe allow: invalid queue "q..x" in "foo q..x"`},
		{"negative response max",
			auth.Config{Users: withPerms(&auth.Permissions{Response: &auth.ResponsePermission{MaxMsgs: -1}})},
			`user "bob": response: negative MaxMsgs -1`},
		{"negative response expiry",
			auth.Config{Users: withPerms(&auth.Permissions{Response: &auth.ResponsePermission{Expires: -time.Second}})},
			`user "bob": response: negative Expires -1s`},
		{"nkey user permissions",
			auth.Config{Users: []auth.User{{Nkey: pub, Permissions: pubPerm([]string{"a b c"}, nil)}}},
			`nkey user "` + pub + `": publish allow: invalid subject "a b c"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := auth.New(tc.cfg)
			if err == nil {
				t.Fatalf("New succeeded (%v), want error %q", a, tc.want)
			}
			if !errors.Is(err, auth.ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
			require.Equal(t, err.Error(), "auth: invalid config: "+tc.want)
			if verr := tc.cfg.Validate(); verr == nil || verr.Error() != err.Error() {
				t.Fatalf("Validate() = %v, want %v", verr, err)
			}
			if strings.Contains(err.Error(), string(seed)) {
				t.Fatalf("error %q quotes a seed", err)
			}
		})
	}
}

func TestValidConfigs(t *testing.T) {
	_, pub := newTestUserKey(t)
	for name, cfg := range map[string]auth.Config{
		"zero":         {},
		"token":        {Token: "t"},
		"bcrypt token": {Token: mustBcrypt(t, "t")},
		"queue permission entries": {Users: []auth.User{{Name: "u", Permissions: &auth.Permissions{
			Subscribe: &auth.SubjectPermission{Allow: []string{"foo.> workers", "bar v1.*", "baz\tq"}, Deny: []string{"foo.secret >"}},
		}}}},
		"nkey no auth user": {Users: []auth.User{{Nkey: pub}}, NoAuthUser: pub},
	} {
		t.Run(name, func(t *testing.T) {
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}

func TestNewDoesNotModifyConfig(t *testing.T) {
	resp := &auth.ResponsePermission{}
	cfg := auth.Config{Users: []auth.User{{Name: "u", Permissions: &auth.Permissions{Response: resp}}}}
	mustNew(t, cfg)
	if *resp != (auth.ResponsePermission{}) {
		t.Fatalf("New modified the config's ResponsePermission: %+v", *resp)
	}
	if cfg.Users[0].Permissions.Publish != nil {
		t.Fatal("New added a Publish permission to the config")
	}
}
