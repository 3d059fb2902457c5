package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
)

func TestSetDefaults(t *testing.T) {
	c := mustParse(t, "")
	c.SetDefaults(testEnv)
	want := Config{
		Listen:              HostPort{Host: server.DefaultHost},
		Port:                server.DefaultPort,
		HTTP:                HostPort{Host: DefaultHTTPHost},
		HTTPPort:            ptr(DefaultHTTPPort),
		MaxPayload:          server.DefaultMaxPayload,
		MaxPending:          server.DefaultMaxPending,
		MaxControlLine:      server.DefaultMaxControlLine,
		MaxConnections:      server.DefaultMaxConnections,
		PingInterval:        Duration(server.DefaultPingInterval),
		PingMax:             server.DefaultMaxPingsOut,
		WriteDeadline:       Duration(server.DefaultWriteDeadline),
		LameDuckDuration:    Duration(server.DefaultLameDuckDuration),
		LameDuckGracePeriod: Duration(server.DefaultLameDuckGrace),
		// On without a jetstream block, with the machine's limits
		// (testEnv reads none: nats-server's fallbacks).
		JetStream: &JetStreamConfig{Enabled: true, StoreDir: "/home/test/.local/state/leafbox",
			MaxMemoryStore: fallbackMaxMemory, MaxFileStore: fallbackMaxFile},
		Healthz: &HealthzConfig{LinkDown: Duration(DefaultHealthLinkDown), BacklogAge: Duration(DefaultHealthBacklogAge)},
	}
	require.DeepEqual(t, exported(c), want)
}

func TestStoreDirResolution(t *testing.T) {
	cases := []struct {
		name string
		src  string
		env  Env
		o    Overrides
		want string
	}{
		{"home", "jetstream: true", Env{Home: "/home/u"}, Overrides{}, "/home/u/.local/state/leafbox"},
		{"systemd", "jetstream: true", Env{StateDirectory: "/var/lib/leafbox", Home: "/root"}, Overrides{}, "/var/lib/leafbox"},
		{"systemd with several", "jetstream: true", Env{StateDirectory: "/var/lib/a:/var/lib/b"}, Overrides{}, "/var/lib/a"},
		{"config", "jetstream: {store_dir: /data/js}", Env{StateDirectory: "/var/lib/leafbox"}, Overrides{}, "/data/js"},
		{"flag", "jetstream: {store_dir: /data/js}", Env{}, Overrides{StoreDir: ptr("/flag/js")}, "/flag/js"},
		{"flag turns it on", "", Env{Home: "/h"}, Overrides{JetStream: ptr(true)}, "/h/.local/state/leafbox"},
		{"off", "jetstream: false", Env{Home: "/h"}, Overrides{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.src)
			tc.o.Apply(c)
			c.SetDefaults(tc.env)
			require.NoError(t, c.Validate())
			require.DeepEqual(t, c.JetStream.StoreDir, tc.want)
		})
	}
}

func TestRelativeStoreDirIsRelativeToTheFile(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(writeFile(t, dir, "js.yaml", "jetstream: {store_dir: data}\n"))
	require.NoError(t, err)
	c.SetDefaults(testEnv)
	require.DeepEqual(t, c.JetStream.StoreDir, filepath.Join(dir, "data"))
}

func TestOverridesWinOverTheFile(t *testing.T) {
	c := mustParse(t, `
listen: 10.0.0.1:5000
http_port: 9000
server_name: from-file
jetstream: {enabled: true, store_dir: /file/js}
leafnodes: {remotes: [{url: nats://file:7422}]}
`)
	Overrides{
		Host:        ptr("127.0.0.1"),
		Port:        ptr(-1),
		HTTPPort:    ptr(0),
		ServerName:  ptr("from-flag"),
		JetStream:   ptr(false),
		LeafRemotes: []string{"nats://a:1", "nats://b:2"},
	}.Apply(c)
	c.SetDefaults(testEnv)
	require.NoError(t, c.Validate())
	require.DeepEqual(t, c.Listen.Host, "127.0.0.1")
	require.DeepEqual(t, c.Port, -1)
	require.DeepEqual(t, *c.HTTPPort, 0)
	require.DeepEqual(t, c.ServerName, "from-flag")
	require.DeepEqual(t, c.JetStream.Enabled, false)
	require.DeepEqual(t, c.JetStream.StoreDir, "/file/js")
	require.DeepEqual(t, c.LeafNodes.Remotes, []RemoteConfig{{URL: "nats://a:1"}, {URL: "nats://b:2"}})
}

func TestNoOverridesKeepTheFile(t *testing.T) {
	c := mustParse(t, "port: 5000\nhttp_port: 0\nserver_name: x\n")
	Overrides{}.Apply(c)
	c.SetDefaults(testEnv)
	require.DeepEqual(t, c.Port, 5000)
	require.DeepEqual(t, *c.HTTPPort, 0)
	require.DeepEqual(t, c.ServerName, "x")
}

// The effective configuration printed by `leafbox config print` must parse
// back to the same configuration.
func TestEffectiveConfigRoundTrips(t *testing.T) {
	c := mustValidate(t, everyKeyValid(t))
	out, err := yaml.Marshal(c)
	require.NoError(t, err)
	back := mustParse(t, string(out))
	back.SetDefaults(testEnv)
	require.DeepEqual(t, exported(back), exported(c))
}

// everyKeyValid is everyKey without the files it names, so it validates.
func everyKeyValid(t testing.TB) string {
	pub, _ := newUserKey(t)
	src := strings.Replace(everyKey, "UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4", pub, 1)
	i := strings.Index(src, "tls:\n")
	j := strings.Index(src, "lame_duck_duration:")
	src = src[:i] + src[j:]
	src = strings.Replace(src, "      credentials: hub.creds\n      nkey: hub.nk\n", "", 1)
	src = strings.Replace(src, "      tls:\n        ca_file: hub-ca.pem\n        cert_file: gw.pem\n        key_file: gw-key.pem\n", "", 1)
	return src
}

func TestRedacted(t *testing.T) {
	c := mustValidate(t, `
authorization:
  token: ""
  users: [{user: a, password: pa}]
accounts:
  A: {users: [{user: b, password: pb}]}
`)
	r := c.Redacted()
	require.DeepEqual(t, r.Authorization.Users[0].Password, "[REDACTED]")
	require.DeepEqual(t, r.Accounts["A"].Users[0].Password, "[REDACTED]")
	require.DeepEqual(t, c.Authorization.Users[0].Password, "pa") // original untouched
	require.DeepEqual(t, c.Accounts["A"].Users[0].Password, "pb")

	tok := mustValidate(t, "authorization: {token: t0k}").Redacted()
	out, err := yaml.Marshal(tok)
	require.NoError(t, err)
	if strings.Contains(string(out), "t0k") {
		t.Fatalf("token printed:\n%s", out)
	}
}

func TestDurationAndSizeMarshal(t *testing.T) {
	out, err := yaml.Marshal(struct {
		D Duration `yaml:"d"`
		S Size     `yaml:"s"`
		T Size     `yaml:"t"`
	}{Duration(90 * time.Second), 64 << 20, 1000})
	require.NoError(t, err)
	require.DeepEqual(t, string(out), "d: 1m30s\ns: 64MiB\nt: 1000\n")
}
