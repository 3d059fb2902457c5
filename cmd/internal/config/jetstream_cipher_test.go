package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"go.yaml.in/yaml/v3"
)

const testJSKey = "0123456789abcdef0123456789abcdef"

// TestJetStreamCipherKeys checks the key sources of jetstream.cipher (the
// file, key_file, $LEAFBOX_JS_KEY) and that config check refuses every
// inconsistent setting with an error on the right key that never shows
// the key.
func TestJetStreamCipherKeys(t *testing.T) {
	dir := t.TempDir()
	keyFile := writeFile(t, dir, "js.key", testJSKey+"\n")
	short := writeFile(t, dir, "short.key", "tiny\n")
	if err := os.Chmod(keyFile, 0o600); err != nil {
		t.Fatal(err)
	}
	ok := []struct {
		name, src, env string
		cipher         string
	}{
		{"off", "jetstream: {}\n", "", ""},
		{"key", "jetstream: {cipher: chachapoly, key: " + testJSKey + "}\n", "", "chachapoly"},
		{"key_file", "jetstream: {cipher: aes, key_file: " + keyFile + "}\n", "", "aes"},
		{"env", "jetstream: {cipher: ChaChaPoly}\n", testJSKey, "chachapoly"},
		{"file beats env", "jetstream: {cipher: aes, key: " + testJSKey + "}\n", "another env key, long enough", "aes"},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, tc.src)
			env := testEnv
			env.JSKey = tc.env
			c.SetDefaults(env)
			require.NoError(t, c.Validate())
			enc, err := c.JetStream.Encryption()
			require.NoError(t, err)
			require.DeepEqual(t, enc.Cipher, tc.cipher)
			if tc.cipher != "" {
				require.DeepEqual(t, string(enc.Key), testJSKey)
			}
			out, err := yaml.Marshal(c.Redacted())
			require.NoError(t, err)
			if strings.Contains(string(out), testJSKey) {
				t.Fatalf("config print shows the key:\n%s", out)
			}
		})
	}
	bad := []struct {
		name, src, path, text string
	}{
		{"unknown cipher", "jetstream: {cipher: rot13, key: " + testJSKey + "}\n", "jetstream.cipher", "want chachapoly or aes"},
		{"no key", "jetstream: {cipher: aes}\n", "jetstream.cipher", "$LEAFBOX_JS_KEY"},
		{"short key", "jetstream: {cipher: aes, key: tiny}\n", "jetstream.key", "4 bytes, want at least 16"},
		{"short key file", "jetstream: {cipher: aes, key_file: " + short + "}\n", "jetstream.key_file", "4 bytes"},
		{"missing key file", "jetstream: {cipher: aes, key_file: " + filepath.Join(dir, "nope") + "}\n", "jetstream.key_file", "cannot read the key"},
		{"two sources", "jetstream: {cipher: aes, key: " + testJSKey + ", key_file: " + keyFile + "}\n", "jetstream.key_file", "one way"},
		{"key without cipher", "jetstream: {key: " + testJSKey + "}\n", "jetstream.key", "cipher"},
		{"key_file without cipher", "jetstream: {key_file: " + keyFile + "}\n", "jetstream.key_file", "cipher"},
		{"short prev key", "jetstream: {cipher: aes, key: " + testJSKey + ", prev_key: tiny}\n", "jetstream.key", "prev_key"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			ps := problems(t, validateErr(t, tc.src))
			require.DeepEqual(t, len(ps), 1)
			if ps[0].Path != tc.path || !strings.Contains(ps[0].Err.Error(), tc.text) {
				t.Fatalf("problem %s: %v; want %s mentioning %q", ps[0].Path, ps[0].Err, tc.path, tc.text)
			}
			if strings.Contains(ps[0].Error(), testJSKey) || strings.Contains(ps[0].Error(), "tiny") {
				t.Fatalf("the error shows the key: %v", ps[0])
			}
		})
	}
}
