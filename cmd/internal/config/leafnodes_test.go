package config

import (
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

func TestValidateLeafRemotes(t *testing.T) {
	dir := t.TempDir()
	writeSeed(t, dir, "gw.nk")
	_, seed := newUserKey(t)
	garbage := writeFile(t, dir, "garbage.nk", "not a seed\n")
	creds := writeFile(t, dir, "hub.creds", "no jwt here\n")
	cases := []struct {
		name, src string
		want      []string
	}{
		{"websocket", "leafnodes:\n  remotes:\n    - url: ws://hub:80", []string{`gw.yaml:3: leafnodes.remotes[0].url: URL "ws://hub:80": websocket leafnodes are not supported yet`}},
		{"secure websocket", "leafnodes:\n  remotes:\n    - urls: [nats://a, 'wss://b:443']", []string{`gw.yaml:3: leafnodes.remotes[0].urls[1]: URL "wss://b:443": websocket leafnodes are not supported yet`}},
		{"http", "leafnodes:\n  remotes:\n    - url: http://hub", []string{`leafnodes.remotes[0].url: URL "http://hub": scheme must be nats-leaf, nats or tls`}},
		{"no scheme", "leafnodes:\n  remotes:\n    - url: hub:7422", []string{`gw.yaml:3: leafnodes.remotes[0].url: not a URL: want scheme://[user[:password]@]host[:port], such as nats-leaf://hub:7422`}},
		{"address", "leafnodes:\n  remotes:\n    - url: 127.0.0.1:7422", []string{`gw.yaml:3: leafnodes.remotes[0].url: not a URL`}},
		{"path", "leafnodes:\n  remotes:\n    - url: nats://hub:7422/x", []string{`gw.yaml:3: leafnodes.remotes[0].url: URL "nats://hub:7422/x": want scheme://[user[:password]@]host[:port]`}},
		{"bad port", "leafnodes:\n  remotes:\n    - url: nats://hub:port", []string{`gw.yaml:3: leafnodes.remotes[0].url: invalid URL: invalid port ":port"`}},
		{"user info hidden", "leafnodes:\n  remotes:\n    - url: ws://leaf:s3cret@hub", []string{`URL "ws://hub": websocket`}},
		{"seed pasted as nkey", "leafnodes:\n  remotes:\n    - url: nats://hub\n      nkey: " + seed, []string{"gw.yaml:4: leafnodes.remotes[0].nkey: is a seed, not a file name"}},
		{"missing nkey file", "leafnodes:\n  remotes:\n    - url: nats://hub\n      nkey: /nonexistent/gw.nk", []string{"gw.yaml:4: leafnodes.remotes[0].nkey: open /nonexistent/gw.nk: no such file or directory"}},
		{"not a seed file", "leafnodes:\n  remotes:\n    - url: nats://hub\n      nkey: " + garbage, []string{"gw.yaml:4: leafnodes.remotes[0].nkey: " + garbage + " holds no user NKey seed"}},
		{"nkey and credentials", "leafnodes:\n  remotes:\n    - url: nats://hub\n      credentials: " + creds + "\n      nkey: gw.nk", []string{"gw.yaml:5: leafnodes.remotes[0].nkey: cannot be combined with credentials"}},
		{"bad creds", "leafnodes:\n  remotes:\n    - url: nats://hub\n      credentials: " + creds, []string{"gw.yaml:4: leafnodes.remotes[0].credentials: " + creds + " holds no user JWT"}},
		{"deny list", "leafnodes:\n  remotes:\n    - url: nats://hub\n      deny_imports:\n        - ok.>\n        - bad.>.x", []string{`gw.yaml:6: leafnodes.remotes[0].deny_imports[1]: invalid subject "bad.>.x"`}},
		{"deny subject", "leafnodes:\n  remotes:\n    - url: nats://hub\n      deny_exports: 'a..b'", []string{`gw.yaml:4: leafnodes.remotes[0].deny_exports: invalid subject "a..b"`}},
		{"tls client cert without key", "leafnodes:\n  remotes:\n    - url: tls://hub\n      tls:\n        cert_file: c.pem", []string{"gw.yaml:4: leafnodes.remotes[0].tls.key_file: missing (cert_file is set)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(writeFile(t, dir, "gw.yaml", tc.src))
			require.NoError(t, err)
			c.SetDefaults(testEnv)
			err = c.Validate()
			require.ErrorContains(t, err, tc.want...)
			for _, secret := range []string{seed, "s3cret"} {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error quotes a secret: %v", err)
				}
			}
		})
	}

	// A relative nkey path is resolved against the file's directory, and
	// nats-server's compression aliases are accepted.
	c, err := Load(writeFile(t, dir, "gw.yaml", "leafnodes:\n  remotes:\n    - url: nats://hub\n      nkey: gw.nk\n      compression: false\n"))
	require.NoError(t, err)
	c.SetDefaults(testEnv)
	require.NoError(t, c.Validate())
}

func TestRemoteTLSKeysAreClientSide(t *testing.T) {
	_, err := Parse([]byte("leafnodes:\n  remotes:\n    - url: tls://hub\n      tls:\n        verify: true\n"))
	require.ErrorContains(t, err, `line 5: leafnodes.remotes[0].tls.verify: unknown key "verify" (known keys: ca_file, cert_file, key_file)`)
}

func TestRedactedHidesURLSecrets(t *testing.T) {
	c := mustValidate(t, "leafnodes:\n  remotes:\n    - urls: [nats://leaf:s3cret@hub1, nats://t0ken@hub2]\n      url: nats://hub3\n")
	r := c.Redacted().LeafNodes.Remotes[0]
	require.DeepEqual(t, r.URLs, StringList{"nats://leaf:[REDACTED]@hub1", "nats://[REDACTED]@hub2"})
	require.DeepEqual(t, r.URL, "nats://hub3")
	require.DeepEqual(t, c.LeafNodes.Remotes[0].URLs[0], "nats://leaf:s3cret@hub1") // original untouched
}

func TestValidateRemotePing(t *testing.T) {
	c := mustValidate(t, "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1', ping_interval: 5s, max_pings_out: 3}]}\n")
	lc := c.LeafConfig(&c.LeafNodes.Remotes[0])
	require.DeepEqual(t, lc.PingInterval, 5*time.Second)
	require.DeepEqual(t, lc.MaxPingsOut, 3)
	err := validateErr(t, "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1', ping_interval: 1ms, max_pings_out: -1}]}\n")
	require.ErrorContains(t, err, "remotes[0].ping_interval: 1ms is too short", "remotes[0].max_pings_out: must not be negative")
}

// A listener given only a port follows the client listener's host; its
// own host wins.
func TestLeafListenFollowsTheClientHost(t *testing.T) {
	cases := []struct {
		name string
		src  string
		o    Overrides
		want string
	}{
		{"--addr and --leaf-port", "", Overrides{Host: ptr("127.0.0.1"), LeafPort: ptr(7422)}, "127.0.0.1:7422"},
		{"listen and a bare port", "listen: 10.1.2.3:4222\nleafnodes: {listen: 7000}\n", Overrides{}, "10.1.2.3:7000"},
		{"ipv6 client host", "listen: '[::1]:4222'\nleafnodes: {listen: 7000}\n", Overrides{}, "[::1]:7000"},
		{"default client host", "", Overrides{LeafPort: ptr(7422)}, "0.0.0.0:7422"},
		{"own host wins", "leafnodes: {listen: '0.0.0.0:7000'}\n", Overrides{Host: ptr("127.0.0.1")}, "0.0.0.0:7000"},
		{"own host, default port", "leafnodes: {listen: 192.168.1.1}\n", Overrides{Host: ptr("127.0.0.1")}, "192.168.1.1:7422"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.src)
			tc.o.Apply(c)
			c.SetDefaults(testEnv)
			require.DeepEqual(t, c.LeafListenAddr(), tc.want)
		})
	}
}
