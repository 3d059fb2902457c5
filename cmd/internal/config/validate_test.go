package config

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nkeys"
)

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

func TestValidateAcceptsGoodConfigs(t *testing.T) {
	pub, _ := newUserKey(t)
	for name, src := range map[string]string{
		"empty":       "",
		"free ports":  "port: -1\nhttp_port: -1\n",
		"no monitor":  "http_port: 0\n",
		"token":       "authorization: {token: s3cret}\n",
		"single user": "authorization: {user: a, password: b}\n",
		"users and accounts": `
authorization:
  users:
    - {user: a, password: b, account: A}
    - nkey: ` + pub + `
      permissions:
        publish: {allow: ["a.>"], deny: [a.secret]}
        subscribe: ["_INBOX.>", "work.* workers"]
        allow_responses: true
no_auth_user: a
accounts:
  A: {users: [{user: c, password: d}]}
  B: {}
`,
		"nkey as no_auth_user": "authorization: {users: [{nkey: " + pub + "}]}\nno_auth_user: " + pub + "\n",
		"user in global":       "authorization: {users: [{user: a, password: b, account: $G}]}\n",
		"jetstream":            "jetstream: {store_dir: /tmp/js, domain: edge, max_file_store: 1GB}\n",
		"leaf remote":          "leafnodes: {remotes: [{urls: [nats://hub:7422, nats-leaf://hub2, tls://u:p@hub3:7422], compression: s2_fast}]}\n",
	} {
		t.Run(name, func(t *testing.T) { mustValidate(t, src) })
	}
}

func TestValidateErrors(t *testing.T) {
	pub, seed := newUserKey(t)
	cases := []struct {
		name, src string
		want      []string
	}{
		{"port range", "\nport: 70000", []string{"line 2: port: 70000 is out of range"}},
		{"http port range", "http_port: -2", []string{"line 1: http_port: -2 is out of range"}},
		{"same ports", "port: 5000\nhttp_port: 5000", []string{"line 2: http_port: 5000 is also the client port"}},
		{"server name", "server_name: my box", []string{"line 1: server_name:", "whitespace"}},
		{"payload over pending", "max_payload: 2MB\nmax_pending: 1MB", []string{"line 1: max_payload: 2MiB must not exceed max_pending (1MiB)"}},
		{"payload limit", "max_payload: 65MiB\nmax_pending: 1GB", []string{"max_payload: 65MiB exceeds the limit of 64MiB"}},
		{"negative payload", "max_payload: -1", []string{"line 1: max_payload: must be positive"}},
		{"negative ping_max", "ping_max: -1", []string{"line 1: ping_max: must not be negative"}},
		{"negative duration", "write_deadline: -1s", []string{"line 1: write_deadline: must be positive"}},
		{"lame duck grace", "lame_duck_duration: 5s\nlame_duck_grace_period: 5s", []string{"line 2: lame_duck_grace_period: 5s must be shorter than lame_duck_duration (5s)"}},
		{"user without password", "authorization: {user: a}", []string{"authorization.password: missing (user is set)"}},
		{"user and users", "authorization:\n  user: a\n  password: b\n  users: [{user: c, password: d}]", []string{"line 2: authorization.user: cannot be combined with users"}},
		{"token and users", "authorization:\n  token: t\n  users: [{user: c, password: d}]", []string{"line 2: authorization.token: cannot be combined with users"}},
		{"token and account users", "authorization: {token: t}\naccounts: {A: {users: [{user: c, password: d}]}}", []string{"authorization.token: cannot be combined with users"}},
		{"nameless user", "authorization:\n  users:\n    - password: x", []string{"line 3: authorization.users[0]: needs user and password, or nkey"}},
		{"bad nkey", "authorization:\n  users:\n    - nkey: UABC", []string{"line 3: authorization.users[0].nkey: not a valid user public nkey"}},
		{"nkey with user", "authorization:\n  users:\n    - nkey: " + pub + "\n      user: x", []string{"line 4: authorization.users[0].user: cannot be combined with nkey"}},
		{"duplicate user", "authorization:\n  users:\n    - {user: a, password: b}\naccounts:\n  A:\n    users:\n      - {user: a, password: c}", []string{`line 7: accounts.A.users[0].user: "a" is already defined at authorization.users[0]`}},
		{"duplicate nkey", "authorization:\n  users:\n    - nkey: " + pub + "\n    - nkey: " + pub, []string{"line 4: authorization.users[1].nkey: already used at authorization.users[0]"}},
		{"unknown account", "authorization:\n  users:\n    - {user: a, password: b, account: NOPE}", []string{`line 3: authorization.users[0].account: "NOPE" is not listed under accounts`}},
		{"account mismatch", "accounts:\n  A: {}\n  B:\n    users:\n      - {user: a, password: b, account: A}", []string{`accounts.B.users[0].account: "A" differs from the account "B"`}},
		{"no_auth_user unknown", "authorization: {users: [{user: a, password: b}]}\nno_auth_user: z", []string{`line 2: no_auth_user: "z" is not a configured user name or nkey`}},
		{"no_auth_user with token", "authorization: {token: t}\nno_auth_user: z", []string{"no_auth_user: cannot be combined with authorization.token"}},
		{"bad subject in list", "authorization:\n  users:\n    - user: a\n      password: b\n      permissions:\n        publish:\n          - ok.>\n          - bad.>.x", []string{`line 8: authorization.users[0].permissions.publish[1]: invalid subject "bad.>.x"`}},
		{"bad subject in map", "authorization:\n  users:\n    - user: a\n      password: b\n      permissions:\n        subscribe:\n          deny:\n            - 'a b c'", []string{`line 8: authorization.users[0].permissions.subscribe.deny[0]: invalid queue group in "a b c"`}},
		{"queue in publish", "authorization:\n  users:\n    - user: a\n      password: b\n      permissions:\n        publish: 'a q'", []string{`line 6: authorization.users[0].permissions.publish: invalid subject "a q" (queue groups only apply to subscribe)`}},
		{"negative response max", "authorization:\n  users:\n    - user: a\n      password: b\n      permissions:\n        allow_responses:\n          max: -1", []string{"line 7: authorization.users[0].permissions.allow_responses.max: must not be negative"}},
		{"tls without cert", "tls:\n  verify: true", []string{"line 1: tls.cert_file: missing"}},
		{"tls key without cert", "tls:\n  key_file: k.pem", []string{"line 1: tls.cert_file: missing (key_file is set)"}},
		{"tls missing file", "tls:\n  cert_file: /nonexistent/cert.pem\n  key_file: /nonexistent/key.pem", []string{"line 2: tls.cert_file: open /nonexistent/cert.pem: no such file or directory", "line 3: tls.key_file: open /nonexistent/key.pem"}},
		{"jetstream domain", "jetstream:\n  domain: a.b", []string{`line 2: jetstream.domain: "a.b" is not a JetStream domain: must not contain '.'`}},
		{"jetstream sizes", "jetstream:\n  max_file_store: -1", []string{"line 2: jetstream.max_file_store: must not be negative"}},
		{"leaf without url", "leafnodes:\n  remotes:\n    - account: A", []string{"line 3: leafnodes.remotes[0]: needs url or urls"}},
		{"leaf scheme", "leafnodes:\n  remotes:\n    - urls:\n        - nats://ok:1\n        - http://hub:7422", []string{`line 5: leafnodes.remotes[0].urls[1]: URL "http://hub:7422": scheme must be nats-leaf, nats or tls`}},
		{"leaf no host", "leafnodes:\n  remotes:\n    - url: 'nats://:7422'", []string{`leafnodes.remotes[0].url: URL "nats://:7422" has no host`}},
		{"leaf compression", "leafnodes:\n  remotes:\n    - url: nats://h:1\n      compression: zip", []string{`line 4: leafnodes.remotes[0].compression: "zip" is not one of`}},
		{"leaf credentials", "leafnodes:\n  remotes:\n    - url: nats://h:1\n      credentials: /nonexistent/x.creds", []string{"line 4: leafnodes.remotes[0].credentials: open /nonexistent/x.creds: no such file or directory"}},
		{"leaf account", "leafnodes:\n  remotes:\n    - url: nats://h:1\n      account: NOPE", []string{`line 4: leafnodes.remotes[0].account: "NOPE" is not listed under accounts`}},
		{"seed as nkey", "authorization:\n  users:\n    - nkey: " + seed, []string{"line 3: authorization.users[0].nkey: is a seed, not a public key"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := validateErr(t, tc.src)
			require.ErrorContains(t, err, tc.want...)
			if strings.Contains(err.Error(), seed) {
				t.Fatalf("error quotes the seed: %v", err)
			}
		})
	}
}

func TestValidateReportsAllProblems(t *testing.T) {
	err := validateErr(t, "port: 70000\nping_max: -1\nserver_name: a b\n")
	ps := problems(t, err)
	require.DeepEqual(t, len(ps), 3)
	for i, p := range ps {
		require.DeepEqual(t, p.Line, i+1)
	}
}

func TestValidateUnwrapsFileErrors(t *testing.T) {
	err := validateErr(t, "tls: {cert_file: /nonexistent/c.pem, key_file: /nonexistent/k.pem}")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("want errors.Is(err, fs.ErrNotExist) through *Error, got %v", err)
	}
}

func TestValidateRunsAuthPackageChecks(t *testing.T) {
	// A password that looks like a bcrypt hash but is not one is rejected
	// by core/auth; config check must reject it too.
	err := validateErr(t, "authorization:\n  users:\n    - user: a\n      password: $2a$10$notreallyahash\n")
	require.ErrorContains(t, err, "line 1: authorization:", "bcrypt")
}

func TestValidateStoreDirNeedsADefault(t *testing.T) {
	c := mustParse(t, "jetstream: true")
	c.SetDefaults(Env{})
	require.ErrorContains(t, c.Validate(), "line 1: jetstream.store_dir: no default")
}

func TestFlagErrorsNameTheFlag(t *testing.T) {
	c := mustParse(t, "port: 4222\n")
	Overrides{Port: ptr(70000), Host: ptr("a b")}.Apply(c)
	c.SetDefaults(testEnv)
	err := c.Validate()
	require.ErrorContains(t, err, "flag --port: port: 70000 is out of range", `flag --addr: listen: invalid host "a b"`)
	for _, p := range problems(t, err) {
		if p.Line != 0 {
			t.Fatalf("a flag's problem has a line: %v", p)
		}
	}
}

func TestConfigErrorFormat(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "gw.yaml", "port: 1\nnope: 2\n")
	_, err := Load(path)
	require.ErrorContains(t, err, path+`:2: nope: unknown key "nope"`)

	path = writeFile(t, dir, "gw2.yaml", "port: 70000\n")
	c, err := Load(path)
	require.NoError(t, err)
	c.SetDefaults(testEnv)
	require.ErrorContains(t, c.Validate(), path+":1: port: 70000 is out of range")
}
