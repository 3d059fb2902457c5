package config

import (
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// everyKey sets every key a Config knows.
const everyKey = `
listen: 10.0.0.1:4223
http: 0.0.0.0
http_port: 8333
server_name: gw-1
max_payload: 2MB
max_pending: 128MiB
max_control_line: 8KB
max_connections: 100
max_subscriptions: 1000
ping_interval: 30s
ping_max: 3
write_deadline: 5s
authorization:
  timeout: 1.5
  users:
    - user: alice
      password: secret
      account: ACME
      permissions:
        publish: ["orders.>", "events.*"]
        subscribe:
          allow: _INBOX.>
          deny: ["secret.>"]
        allow_responses: {max: 5, expires: 1m}
    - nkey: UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4
      permissions:
        publish: single.subject
        allow_responses: true
no_auth_user: alice
accounts:
  ACME:
    users:
      - user: bob
        password: pw
  OTHER: {}
tls:
  cert_file: cert.pem
  key_file: key.pem
  ca_file: ca.pem
  verify: true
  handshake_first: true
  timeout: 3s
lame_duck_duration: 30s
lame_duck_grace_period: 5s
jetstream:
  enabled: true
  store_dir: /var/lib/leafbox
  max_memory_store: 1G
  max_file_store: 10GiB
  domain: edge
  sync_interval: 2m
leafnodes:
  remotes:
    - urls: [nats://hub1:7422, "tls://hub2:7422"]
      url: nats://hub3:7422
      credentials: hub.creds
      nkey: hub.nk
      account: ACME
      compression: s2_auto
      tls:
        ca_file: hub-ca.pem
        cert_file: gw.pem
        key_file: gw-key.pem
      deny_imports: [admin.>]
      deny_exports: ["local.>", "debug.*"]
`

func TestParseEveryKey(t *testing.T) {
	got := exported(mustParse(t, everyKey))
	want := Config{
		Listen:           HostPort{Host: "10.0.0.1"},
		Port:             4223,
		HTTP:             HostPort{Host: "0.0.0.0"},
		HTTPPort:         ptr(8333),
		ServerName:       "gw-1",
		MaxPayload:       2 << 20,
		MaxPending:       128 << 20,
		MaxControlLine:   8 << 10,
		MaxConnections:   100,
		MaxSubscriptions: 1000,
		PingInterval:     Duration(30 * time.Second),
		PingMax:          3,
		WriteDeadline:    Duration(5 * time.Second),
		Authorization: &AuthorizationConfig{
			Timeout: Duration(1500 * time.Millisecond),
			Users: []UserConfig{
				{
					User: "alice", Password: "secret", Account: "ACME",
					Permissions: &PermissionsConfig{
						Publish:        &SubjectPermission{Allow: StringList{"orders.>", "events.*"}},
						Subscribe:      &SubjectPermission{Allow: StringList{"_INBOX.>"}, Deny: StringList{"secret.>"}},
						AllowResponses: &ResponsePermission{Enabled: true, Max: 5, Expires: Duration(time.Minute)},
					},
				},
				{
					Nkey: "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4",
					Permissions: &PermissionsConfig{
						Publish:        &SubjectPermission{Allow: StringList{"single.subject"}},
						AllowResponses: &ResponsePermission{Enabled: true},
					},
				},
			},
		},
		NoAuthUser: "alice",
		Accounts: map[string]AccountConfig{
			"ACME":  {Users: []UserConfig{{User: "bob", Password: "pw"}}},
			"OTHER": {},
		},
		TLS: &TLSConfig{
			CertFile: "cert.pem", KeyFile: "key.pem", CAFile: "ca.pem",
			Verify: true, HandshakeFirst: true, Timeout: Duration(3 * time.Second),
		},
		LameDuckDuration:    Duration(30 * time.Second),
		LameDuckGracePeriod: Duration(5 * time.Second),
		JetStream: &JetStreamConfig{
			Enabled: true, StoreDir: "/var/lib/leafbox",
			MaxMemoryStore: 1000 * 1000 * 1000, MaxFileStore: 10 << 30,
			Domain: "edge", SyncInterval: SyncInterval(2 * time.Minute),
		},
		LeafNodes: &LeafNodesConfig{Remotes: []RemoteConfig{{
			URLs:        StringList{"nats://hub1:7422", "tls://hub2:7422"},
			URL:         "nats://hub3:7422",
			Credentials: "hub.creds",
			Nkey:        "hub.nk",
			Account:     "ACME",
			Compression: "s2_auto",
			TLS:         &RemoteTLSConfig{CAFile: "hub-ca.pem", CertFile: "gw.pem", KeyFile: "gw-key.pem"},
			DenyImports: StringList{"admin.>"},
			DenyExports: StringList{"local.>", "debug.*"},
		}}},
	}
	require.DeepEqual(t, got, want)
}

func TestParseEmptyIsAllDefaults(t *testing.T) {
	for _, src := range []string{"", "\n", "# only a comment\n", "---\n"} {
		require.DeepEqual(t, exported(mustParse(t, src)), Config{})
	}
}

func TestParseSizes(t *testing.T) {
	good := []struct {
		in   string
		want Size
	}{
		{"1024", 1024},
		{`"1024"`, 1024},
		{"1MB", 1 << 20},
		{"1mb", 1 << 20},
		{"1 MB", 1 << 20},
		{"64MiB", 64 << 20},
		{"64Mi", 64 << 20},
		{"512KB", 512 << 10},
		{"512kib", 512 << 10},
		{"1K", 1000},
		{"2M", 2000000},
		{"3G", 3000000000},
		{"2GB", 2 << 30},
		{"1T", 1000000000000},
		{"1TiB", 1 << 40},
		{"100B", 100},
		{"-1", -1},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			c := mustParse(t, "max_payload: "+tc.in)
			require.DeepEqual(t, c.MaxPayload, tc.want)
		})
	}
	bad := []string{"1.5MB", "MB", "12XB", `""`, "99999999TB", "[1]", "{a: 1}", "true", "0x10"}
	for _, in := range bad {
		t.Run("bad "+in, func(t *testing.T) {
			_, err := Parse([]byte("port: 1\nmax_pending: " + in + "\n"))
			require.ErrorContains(t, err, "line 2: max_pending: invalid size")
		})
	}
}

func TestSizeStringRoundTrips(t *testing.T) {
	for _, s := range []Size{0, 1, 1000, 1 << 10, 1536, 1 << 20, 64 << 20, 3 << 30, 1 << 40, -1} {
		back, err := ParseSize(s.String())
		require.NoError(t, err)
		require.DeepEqual(t, back, s)
	}
	require.DeepEqual(t, Size(1<<20).String(), "1MiB")
	require.DeepEqual(t, Size(1536).String(), "1536")
}

func TestParseDurations(t *testing.T) {
	good := []struct {
		in   string
		want time.Duration
	}{
		{"2m", 2 * time.Minute},
		{"10s", 10 * time.Second},
		{"1h30m", 90 * time.Minute},
		{"250ms", 250 * time.Millisecond},
		{"5", 5 * time.Second},
		{"0.5", 500 * time.Millisecond},
		{`"2m0s"`, 2 * time.Minute},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			c := mustParse(t, "ping_interval: "+tc.in)
			require.DeepEqual(t, time.Duration(c.PingInterval), tc.want)
		})
	}
	for _, in := range []string{"2 minutes", "abc", "[1s]", "true", "1e300"} {
		t.Run("bad "+in, func(t *testing.T) {
			_, err := Parse([]byte("\nwrite_deadline: " + in))
			require.ErrorContains(t, err, "line 2: write_deadline: invalid duration")
		})
	}
}

func TestParseAddresses(t *testing.T) {
	good := []struct {
		in       string
		wantHost string
		wantPort int
	}{
		{"0.0.0.0:4222", "0.0.0.0", 4222},
		{"127.0.0.1", "127.0.0.1", 0},
		{":4223", "", 4223},
		{"4224", "", 4224},
		{`"[::1]:4225"`, "::1", 4225},
		{`"::1"`, "::1", 0},
		{"localhost:4226", "localhost", 4226},
		{"gateway.local", "gateway.local", 0},
	}
	for _, tc := range good {
		t.Run(tc.in, func(t *testing.T) {
			c := mustParse(t, "listen: "+tc.in)
			require.DeepEqual(t, c.Listen.Host, tc.wantHost)
			require.DeepEqual(t, c.Port, tc.wantPort)
			require.DeepEqual(t, c.Listen.Port, (*int)(nil))
		})
	}
	for _, in := range []string{"host:abc", `""`, "[a, b]", `"a b"`} {
		t.Run("bad "+in, func(t *testing.T) {
			_, err := Parse([]byte("listen: " + in))
			require.ErrorContains(t, err, "line 1: listen: ")
		})
	}
}

func TestParseHTTPPortMovesToHTTPPort(t *testing.T) {
	c := mustParse(t, "http: 127.0.0.1:9000")
	require.DeepEqual(t, *c.HTTPPort, 9000)
	require.DeepEqual(t, c.HTTP, HostPort{Host: "127.0.0.1"})

	c = mustParse(t, "http_port: 0")
	require.DeepEqual(t, *c.HTTPPort, 0) // explicitly off, unlike unset
}

func TestParseConflictingPorts(t *testing.T) {
	_, err := Parse([]byte("port: 4223\nlisten: 0.0.0.0:4222\n"))
	require.ErrorContains(t, err, "line 2: listen: port 4222 disagrees with port: 4223")

	_, err = Parse([]byte("http_port: 8223\nhttp: 127.0.0.1:8222\n"))
	require.ErrorContains(t, err, "line 2: http: port 8222 disagrees with http_port: 8223")

	mustParse(t, "port: 4222\nlisten: 0.0.0.0:4222\n") // the same port twice is fine
}

func TestParseUnknownKeys(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"top level", "port: 1\nfoo: 2\n", []string{`line 2: foo: unknown key "foo"`, "known keys: listen, port,"}},
		{"nested", "authorization:\n  user: a\n  tokn: x\n", []string{`line 3: authorization.tokn: unknown key "tokn" (did you mean "token"?)`}},
		{"nothing near", "authorization:\n  user: a\n  secret: x\n", []string{`line 3: authorization.secret: unknown key "secret"`, "known keys: token, user, password, users, timeout"}},
		{"in a user", "authorization:\n  users:\n    - user: a\n      pasword: b\n", []string{`line 4: authorization.users[0].pasword: unknown key "pasword"`}},
		{"in a permission mapping", "authorization:\n  users:\n    - user: a\n      permissions:\n        publish:\n          alow: [x]\n", []string{`line 6: authorization.users[0].permissions.publish.alow: unknown key "alow" (did you mean "allow"?)`}},
		{"in allow_responses", "authorization:\n  users:\n    - user: a\n      permissions:\n        allow_responses: {max: 1, expire: 2s}\n", []string{`line 5:`, `unknown key "expire" (did you mean "expires"?)`}},
		{"in jetstream", "jetstream:\n  store: /x\n", []string{`line 2: jetstream.store: unknown key "store"`, "store_dir"}},
		{"in tls", "tls:\n  cert: x\n", []string{`line 2: tls.cert: unknown key "cert"`}},
		{"in a leaf remote", "leafnodes:\n  remotes:\n    - url: nats://h:1\n      hub: true\n", []string{`line 4: leafnodes.remotes[0].hub: unknown key "hub"`}},
		{"in an account", "accounts:\n  A:\n    jetstream: true\n", []string{`line 3: accounts.A.jetstream: unknown key "jetstream"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.src))
			require.ErrorContains(t, err, tc.want...)
		})
	}
}

func TestParseReportsEveryProblemInOrder(t *testing.T) {
	src := "port: abc\nmax_payload: 1XB\nnope: 1\nping_interval: soon\n"
	_, err := Parse([]byte(src))
	ps := problems(t, err)
	if len(ps) != 4 {
		t.Fatalf("want 4 problems, got %d: %v", len(ps), err)
	}
	for i, p := range ps {
		require.DeepEqual(t, p.Line, i+1)
	}
	require.DeepEqual(t, ps[0].Path, "port")
	require.ErrorContains(t, ps[0], "cannot unmarshal")
}

func TestParseSyntaxErrorHasLine(t *testing.T) {
	_, err := Parse([]byte("port: 1\nlisten: [\n"))
	ps := problems(t, err)
	if ps[0].Line == 0 {
		t.Fatalf("syntax error without a line: %v", err)
	}
	_, err = Parse([]byte("port: 1\n  bad indent: 2\n"))
	require.ErrorContains(t, err, "line 2")
}

func TestParseDuplicateKey(t *testing.T) {
	_, err := Parse([]byte("port: 1\nport: 2\n"))
	require.ErrorContains(t, err, "line 2", `"port" already defined at line 1`)
}

func TestParseRejectsSecondDocument(t *testing.T) {
	_, err := Parse([]byte("port: 1\n---\nport: 2\n"))
	require.ErrorContains(t, err, "only one YAML document")
}

func TestParsePermissionForms(t *testing.T) {
	perms := func(src string) *PermissionsConfig {
		t.Helper()
		c := mustParse(t, "authorization:\n  users:\n    - user: a\n      password: b\n      permissions:\n"+src)
		return c.Authorization.Users[0].Permissions
	}
	require.DeepEqual(t, perms("        publish: a.b\n").Publish, &SubjectPermission{Allow: StringList{"a.b"}})
	require.DeepEqual(t, perms("        publish: [a, b]\n").Publish, &SubjectPermission{Allow: StringList{"a", "b"}})
	require.DeepEqual(t, perms("        subscribe: {deny: x}\n").Subscribe, &SubjectPermission{Deny: StringList{"x"}})
	require.DeepEqual(t, perms("        allow_responses: false\n").AllowResponses, &ResponsePermission{})
	require.DeepEqual(t, perms("        allow_responses: {expires: 5s}\n").AllowResponses,
		&ResponsePermission{Enabled: true, Expires: Duration(5 * time.Second)})

	_, err := Parse([]byte("authorization:\n  users:\n    - user: a\n      permissions:\n        allow_responses: yes please\n"))
	require.ErrorContains(t, err, "line 5:", "invalid allow_responses")
	_, err = Parse([]byte("authorization:\n  users:\n    - user: a\n      permissions:\n        publish: [[a]]\n"))
	require.ErrorContains(t, err, "line 5:", "want a string")
}

func TestParseJetStreamForms(t *testing.T) {
	require.DeepEqual(t, mustParse(t, "jetstream: true").JetStream, &JetStreamConfig{Enabled: true})
	require.DeepEqual(t, mustParse(t, "jetstream: false").JetStream, &JetStreamConfig{})
	require.DeepEqual(t, mustParse(t, "jetstream: {}").JetStream, &JetStreamConfig{Enabled: true})
	require.DeepEqual(t, mustParse(t, "jetstream: {enabled: false, domain: x}").JetStream, &JetStreamConfig{Domain: "x"})
	_, err := Parse([]byte("jetstream: maybe"))
	require.ErrorContains(t, err, "line 1: jetstream: invalid jetstream")
}

func TestDefaultParses(t *testing.T) {
	c := Default()
	c.SetDefaults(testEnv)
	require.NoError(t, c.Validate())
	require.DeepEqual(t, c.Listen.Host, "0.0.0.0")
	require.DeepEqual(t, c.Port, 4222)
	require.DeepEqual(t, c.HTTP.Host, "127.0.0.1")
	require.DeepEqual(t, *c.HTTPPort, 8222)
	require.DeepEqual(t, c.JetStream.Enabled, true)
	if !strings.Contains(string(DefaultYAML()), "listen: 0.0.0.0:4222") {
		t.Fatalf("DefaultYAML does not look like the default:\n%s", DefaultYAML())
	}
}

func TestSyncIntervalAlways(t *testing.T) {
	for in, want := range map[string]SyncInterval{"always": SyncAlways, "Always": SyncAlways, "2s": SyncInterval(2 * time.Second), "5": SyncInterval(5 * time.Second)} {
		cfg, err := Parse([]byte("jetstream:\n  sync_interval: " + in + "\n"))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got := cfg.JetStream.SyncInterval; got != want {
			t.Errorf("%s: got %v, want %v", in, got, want)
		}
	}
	if _, err := Parse([]byte("jetstream:\n  sync_interval: sometimes\n")); err == nil || !strings.Contains(err.Error(), "always") {
		t.Fatalf("bad sync_interval: %v", err)
	}
}
