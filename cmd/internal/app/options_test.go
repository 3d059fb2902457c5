package app

import (
	"crypto/tls"
	"path/filepath"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/store/jetstream"
)

func TestServerOptionsMapsEveryOption(t *testing.T) {
	pub, _ := newUserKey(t)
	c := mustValidate(t, `
listen: 127.0.0.1:4333
server_name: gw
max_payload: 2MB
max_pending: 32MB
max_control_line: 1KB
max_connections: 10
max_subscriptions: 20
ping_interval: 1m
ping_max: 4
write_deadline: 3s
lame_duck_duration: 20s
lame_duck_grace_period: 2s
authorization:
  timeout: 4s
  users:
    - user: a
      password: b
      permissions:
        publish: {allow: [x.>], deny: [x.y]}
        subscribe: "q.* grp"
        allow_responses: {max: 3, expires: 10s}
    - nkey: `+pub+`
      account: A
no_auth_user: a
accounts:
  A:
    users: [{user: c, password: d}]
  B: {}
jetstream: {domain: edge, store_dir: /tmp/js}
`)
	opts, err := serverOptions(c)
	require.NoError(t, err)
	want := server.Options{
		ServerName:          "gw",
		Host:                "127.0.0.1",
		Port:                4333,
		MaxPayload:          2 << 20,
		MaxControlLine:      1 << 10,
		MaxPending:          32 << 20,
		MaxConnections:      10,
		MaxSubs:             20,
		PingInterval:        time.Minute,
		MaxPingsOut:         4,
		WriteDeadline:       3 * time.Second,
		AuthTimeout:         4 * time.Second,
		LameDuckDuration:    20 * time.Second,
		LameDuckGracePeriod: 2 * time.Second,
		Auth: &auth.Config{
			NoAuthUser: "a",
			Users: []auth.User{
				{Name: "a", Password: "b", Permissions: &auth.Permissions{
					Publish:   &auth.SubjectPermission{Allow: []string{"x.>"}, Deny: []string{"x.y"}},
					Subscribe: &auth.SubjectPermission{Allow: []string{"q.* grp"}},
					Response:  &auth.ResponsePermission{MaxMsgs: 3, Expires: 10 * time.Second},
				}},
				{Nkey: pub, Account: "A"},
			},
			Accounts: []auth.Account{
				{Name: "A", Users: []auth.User{{Name: "c", Password: "d"}}},
				{Name: "B"},
			},
		},
		JetStream:         true,
		JetStreamDomain:   "edge",
		JetStreamAPILevel: jetstream.APILevel,
	}
	require.DeepEqual(t, opts, want)
	require.NoError(t, opts.Validate())
}

func TestServerOptionsWithoutAuth(t *testing.T) {
	opts, err := serverOptions(mustValidate(t, "port: -1"))
	require.NoError(t, err)
	if opts.Auth != nil {
		t.Fatalf("want no auth config, got %+v", opts.Auth)
	}
	require.DeepEqual(t, opts.Port, server.RandomPort)
	require.DeepEqual(t, opts.TLS, (*tls.Config)(nil))
}

func TestServerOptionsSingleUserAndToken(t *testing.T) {
	opts, err := serverOptions(mustValidate(t, "authorization: {user: u, password: p}"))
	require.NoError(t, err)
	require.DeepEqual(t, opts.Auth.Users, []auth.User{{Name: "u", Password: "p"}})

	opts, err = serverOptions(mustValidate(t, "authorization: {token: tok}"))
	require.NoError(t, err)
	require.DeepEqual(t, opts.Auth, &auth.Config{Token: "tok"})
	require.DeepEqual(t, opts.AuthTimeout, server.DefaultAuthTimeout)
}

func TestServerOptionsTLS(t *testing.T) {
	dir := t.TempDir()
	writeCert(t, dir)
	// Relative paths resolve against the file's directory, not the
	// working directory.
	path := writeFile(t, dir, "tls.yaml", `
tls:
  cert_file: cert.pem
  key_file: key.pem
  ca_file: cert.pem
  verify: true
  handshake_first: true
`)
	c, err := Load(path)
	require.NoError(t, err)
	c.SetDefaults(testEnv)
	opts, err := serverOptions(c)
	require.NoError(t, err)
	if opts.TLS == nil {
		t.Fatal("no TLS config")
	}
	require.DeepEqual(t, opts.TLS.MinVersion, uint16(tls.VersionTLS12))
	require.DeepEqual(t, opts.TLS.ClientAuth, tls.RequireAndVerifyClientCert)
	require.DeepEqual(t, len(opts.TLS.Certificates), 1)
	if opts.TLS.ClientCAs == nil {
		t.Fatal("no client CA pool")
	}
	require.DeepEqual(t, opts.TLSRequired, true)
	require.DeepEqual(t, opts.TLSVerify, true)
	require.DeepEqual(t, opts.TLSHandshakeFirst, true)
	require.DeepEqual(t, opts.TLSTimeout, server.DefaultTLSTimeout)
}

func TestServerOptionsTLSBadFiles(t *testing.T) {
	dir := t.TempDir()
	cert, _ := writeCert(t, dir)
	junk := writeFile(t, dir, "junk.pem", "not pem")
	cases := []struct {
		name, src string
		want      []string
	}{
		{"key does not match", "tls: {cert_file: " + cert + ", key_file: " + junk + "}", []string{"line 1: tls: cert_file and key_file:"}},
		{"ca without pem", "tls:\n  cert_file: " + cert + "\n  key_file: " + filepath.Join(dir, "key.pem") + "\n  ca_file: " + junk, []string{"line 4: tls.ca_file: no PEM certificates found"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.src)
			c.SetDefaults(testEnv)
			_, err := serverOptions(c)
			require.ErrorContains(t, err, tc.want...)
		})
	}
}
