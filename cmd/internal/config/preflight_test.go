package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// preflightErr loads src from a file in dir, fills defaults from env and
// returns Validate's error or else Preflight's.
func preflightErr(t *testing.T, dir, src string, env Env) (string, error) {
	t.Helper()
	path := writeFile(t, dir, "gw.yaml", src)
	c, err := Load(path)
	require.NoError(t, err)
	c.SetDefaults(env)
	require.NoError(t, c.Validate())
	return path, c.Preflight()
}

// Preflight names the store directory's real problem at its file:line,
// creating nothing.
func TestPreflightStoreDir(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "afile", "x")
	cases := []struct {
		name  string
		store string
		want  string // "" is no problem
	}{
		{"a file", file, file + " is not a directory"},
		{"under a file", filepath.Join(file, "js"), filepath.Join(file, "js") + " cannot be created: " + file + " is not a directory"},
		{"existing directory", dir, ""},
		{"to be created", filepath.Join(dir, "new", "js"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, err := preflightErr(t, t.TempDir(), "port: 4333\njetstream:\n  store_dir: '"+tc.store+"'\n", testEnv)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, path+":3: jetstream.store_dir: "+tc.want)
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("preflight created the store directory: %v", err)
	}
}

func TestPreflightUnwritableStoreDir(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes to read-only directories")
	}
	ro := t.TempDir()
	require.NoError(t, os.Chmod(ro, 0o500))
	t.Cleanup(func() { _ = os.Chmod(ro, 0o700) })
	path, err := preflightErr(t, t.TempDir(), "jetstream: {store_dir: '"+ro+"'}\n", testEnv)
	require.ErrorContains(t, err, path+":1: jetstream.store_dir: "+ro+" is not writable")
	_, err = preflightErr(t, t.TempDir(), "jetstream: {store_dir: '"+filepath.Join(ro, "js")+"'}\n", testEnv)
	require.ErrorContains(t, err, "cannot be created: "+ro+" is not writable")
}

// The outboxes' directory is checked when JetStream is off.
func TestPreflightOutboxDir(t *testing.T) {
	file := writeFile(t, t.TempDir(), "afile", "x")
	path, err := preflightErr(t, t.TempDir(), `jetstream: false
leafnodes: {remotes: [{url: nats://hub}]}
uplinks: [{name: t, subjects: [t.>], hub_subject_prefix: s.}]
`, Env{StateDirectory: file})
	require.ErrorContains(t, err, path+":3: uplinks: outbox directory: "+file+" is not a directory")
}

// Listen hosts must be addresses of this machine or names that resolve;
// nothing is bound.
func TestPreflightListenHosts(t *testing.T) {
	cases := []struct {
		name, src, want string
	}{
		{"loopback", "listen: 127.0.0.1\nhttp: 127.0.0.1\n", ""},
		{"any loopback address", "listen: 127.0.0.2\n", ""},
		{"unspecified", "listen: 0.0.0.0\nhttp: '::'\n", ""},
		{"localhost", "listen: localhost\n", ""},
		{"foreign address", "listen: 192.0.2.1:4222\n", ":1: listen: 192.0.2.1 is not an address of this machine"},
		{"monitoring host", "port: 4333\nhttp: 192.0.2.1\n", ":2: http: 192.0.2.1 is not an address of this machine"},
		{"monitoring off", "http: 192.0.2.1\nhttp_port: 0\n", ""},
		{"unresolvable", "listen: no-such-host.invalid\n", `:1: listen: host "no-such-host.invalid" does not resolve`},
		{"leafnode listener", "leafnodes:\n  listen: 192.0.2.1:7422\n", ":2: leafnodes.listen: 192.0.2.1 is not an address of this machine"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path, err := preflightErr(t, t.TempDir(), tc.src+"jetstream: false\n", testEnv)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, path+tc.want)
		})
	}
}

func TestUnknownKeySuggestsTheNearest(t *testing.T) {
	cases := []struct{ src, want string }{
		{"max_paylod: 1MB\n", `line 1: max_paylod: unknown key "max_paylod" (did you mean "max_payload"?)`},
		{"sever_name: x\n", `unknown key "sever_name" (did you mean "server_name"?)`},
		{"Max_Payload: 1MB\n", `(did you mean "max_payload"?)`},
		{"jetstream:\n  store_dri: /x\n", `line 2: jetstream.store_dri: unknown key "store_dri" (did you mean "store_dir"?)`},
		{"uplinks:\n  - name: a\n    subjcts: [a]\n", `line 3: uplinks[0].subjcts: unknown key "subjcts" (did you mean "subjects"?)`},
		{"downlinks:\n  - name: a\n    strem: S\n", `(did you mean "stream"?)`},
		{"authorization: {tokn: x}\n", `(did you mean "token"?)`},
		// Nothing near: the known keys are listed.
		{"jetstream:\n  store: /x\n", `unknown key "store" (known keys: enabled, store_dir,`},
		{"colour: blue\n", `unknown key "colour" (known keys: listen, port,`},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.src))
		require.ErrorContains(t, err, tc.want)
	}
}

func TestEditDistance(t *testing.T) {
	cases := []struct {
		a, b string
		d    int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"max_paylod", "max_payload", 1},
		{"tokn", "token", 1}, {"stroe_dir", "store_dir", 1}, {"kitten", "sitting", 3}, {"port", "port", 0},
	}
	for _, tc := range cases {
		require.DeepEqual(t, editDistance(tc.a, tc.b), tc.d)
		require.DeepEqual(t, editDistance(tc.b, tc.a), tc.d)
	}
	require.DeepEqual(t, nearestKey("prot", []string{"port", "ports"}), "port")
	require.DeepEqual(t, nearestKey("ab", []string{"ac", "ad"}), "") // a tie suggests nothing
	require.DeepEqual(t, nearestKey("zzzzzz", []string{"port"}), "")
}
