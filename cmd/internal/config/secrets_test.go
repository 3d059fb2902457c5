package config

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// A file holding a secret that others may read fails Preflight (so config
// check and Build) with its name, mode and the fix; owner-only and
// group-readable files pass.
func TestPreflightSecretModes(t *testing.T) {
	cases := []struct {
		name string
		key  string // the key the error names
		line int    // its line in the file
		src  func(file string) string
	}{
		{"remote credentials", "leafnodes.remotes[0].credentials", 4, func(f string) string {
			return "leafnodes:\n  remotes:\n    - url: nats://hub\n      credentials: " + f + "\n"
		}},
		{"remote nkey", "leafnodes.remotes[0].nkey", 4, func(f string) string {
			return "leafnodes:\n  remotes:\n    - url: nats://hub\n      nkey: " + f + "\n"
		}},
		{"remote tls key", "leafnodes.remotes[0].tls.key_file", 6, func(f string) string {
			return "leafnodes:\n  remotes:\n    - url: nats://hub\n      tls:\n        cert_file: c.pem\n        key_file: " + f + "\n"
		}},
		{"client tls key", "tls.key_file", 3, func(f string) string {
			return "tls:\n  cert_file: c.pem\n  key_file: " + f + "\n"
		}},
		{"leafnodes tls key", "leafnodes.tls.key_file", 5, func(f string) string {
			return "leafnodes:\n  listen: 127.0.0.1:-1\n  tls:\n    cert_file: c.pem\n    key_file: " + f + "\n"
		}},
		{"mqtt password file", "bridges.mqtt[0].password_file", 6, func(f string) string {
			return "bridges:\n  mqtt:\n    - name: site\n      server: 127.0.0.1:1883\n      username: u\n      password_file: " + f + "\n"
		}},
		{"mqtt tls key", "bridges.mqtt[0].tls.key_file", 7, func(f string) string {
			return "bridges:\n  mqtt:\n    - name: site\n      server: tls://127.0.0.1\n      tls:\n        cert_file: c.pem\n        key_file: " + f + "\n"
		}},
	}
	for _, tc := range cases {
		for _, mode := range []os.FileMode{0o600, 0o640, 0o400, 0o644, 0o604, 0o666} {
			t.Run(fmt.Sprintf("%s/%04o", tc.name, mode), func(t *testing.T) {
				dir := t.TempDir()
				secret := writeFile(t, dir, "secret", "SUAsecret\n")
				require.NoError(t, os.Chmod(secret, mode))
				path := writeFile(t, dir, "gw.yaml", tc.src(secret))
				c, err := Load(path)
				require.NoError(t, err)
				c.SetDefaults(testEnv)
				err = c.Preflight()
				if mode&0o004 == 0 {
					require.NoError(t, err)
					return
				}
				require.ErrorContains(t, err, fmt.Sprintf("%s:%d: %s: %s holds a secret and is readable by others (mode %04o): run chmod 600 %s", path, tc.line, tc.key, secret, mode, secret))
			})
		}
	}
}

// The gateway identity in the store directory is checked the same way,
// and a missing one (it is made 0600 on the first start) is no problem.
func TestPreflightIdentityMode(t *testing.T) {
	for _, mode := range []os.FileMode{0, 0o600, 0o640, 0o644} {
		t.Run(fmt.Sprintf("%04o", mode), func(t *testing.T) {
			dir := t.TempDir()
			store := filepath.Join(dir, "store")
			path := writeFile(t, dir, "gw.yaml", "jetstream:\n  store_dir: "+store+"\n")
			c, err := Load(path)
			require.NoError(t, err)
			c.SetDefaults(testEnv)
			id := c.IdentityPath()
			if id == "" {
				t.Fatal("no identity path")
			}
			if mode != 0 {
				require.NoError(t, os.MkdirAll(filepath.Dir(id), 0o700))
				require.NoError(t, os.WriteFile(id, []byte("SUAseed\n"), mode))
				require.NoError(t, os.Chmod(id, mode))
			}
			err = c.Preflight()
			if mode&0o004 == 0 {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, fmt.Sprintf("identity: %s holds a secret and is readable by others (mode 0644): run chmod 600 %s", id, id))
		})
	}
}
