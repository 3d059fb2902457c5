package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/cmd/internal/config"
)

// flipByte flips one bit of the file at off (from the end when negative).
func flipByte(t *testing.T, path string, off int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if off < 0 {
		off += len(b)
	}
	b[off] ^= 0x01
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// store verify and inspect on a store a real leafbox encrypted, with
// either cipher: refused without a key (naming the ways to give one),
// checked with the key from --key-file, --config or $LEAFBOX_JS_KEY
// (the stream, its consumer, the uplink's outbox, all sealed), an error
// and no report with a wrong key, and damage (exit 2) naming the file
// and offset for a flipped byte in a sealed record, or naming the key
// file whose seal no longer opens when the key opens the others.
func TestStoreVerifyEncrypted(t *testing.T) {
	for _, cipher := range []string{"chachapoly", "aes"} {
		t.Run(cipher, func(t *testing.T) {
			key := "gateway key " + cipher + " 0123456789abcdef"
			keyFile := writeFile(t, "js.key", key+"\n")
			a, dir, conf := storeFixtureWith(t, fmt.Sprintf(", cipher: %s, key_file: %q", cipher, keyFile))
			stopApp(t, a)
			t.Setenv(config.KeyEnv, "")

			_, stderr, code := runCLI(t, "store", "verify", dir)
			requireCode(t, code, 1, stderr)
			requireContains(t, "verify without a key", stderr, "encrypted at rest", "--key-file FILE", "--config FILE", "$LEAFBOX_JS_KEY")

			for _, args := range [][]string{{"--key-file", keyFile}, {"--config", conf}, {"-c", conf}} {
				stdout, stderr, code := runCLI(t, append([]string{"store", "verify", dir}, args...)...)
				requireCode(t, code, 0, stderr)
				requireContains(t, "verify "+strings.Join(args, " "), stdout, "stream ORDERS: 47 messages", "seq 2..50", "sealed with "+cipher+": ok",
					"consumer billing: ", "sealed with "+cipher+", delivered stream seq", "ack floor 11", "store outbox/tel", "5 messages", "no damage")
				if strings.Contains(stdout, "warning:") {
					t.Fatalf("verify %v: warnings on a clean store:\n%s", args, stdout)
				}
			}
			t.Setenv(config.KeyEnv, key)
			stdout, stderr, code := runCLI(t, "store", "verify", dir)
			requireCode(t, code, 0, stderr)
			requireContains(t, "verify with $LEAFBOX_JS_KEY", stdout, "stream ORDERS: 47 messages", "no damage")
			stdout, stderr, code = runCLI(t, "store", "inspect", dir)
			requireCode(t, code, 0, stderr)
			requireContains(t, "inspect with $LEAFBOX_JS_KEY", stdout, "ORDERS", "orders.>", "47", "billing", "explicit", "outbox/tel")
			t.Logf("store inspect of an encrypted store:\n%s", stdout)
			t.Setenv(config.KeyEnv, "")

			wrong := writeFile(t, "wrong.key", "some other gateway's key 0123456789")
			for _, sub := range []string{"verify", "inspect"} {
				stdout, stderr, code := runCLI(t, "store", sub, dir, "--key-file", wrong)
				requireCode(t, code, 1, stderr)
				requireContains(t, sub+" with a wrong key", stderr, "wrong key", "does not open", "not this store's")
				if stdout != "" || strings.Contains(stderr, "DAMAGE") {
					t.Fatalf("%s with a wrong key reported:\n%s%s", sub, stdout, stderr)
				}
			}
			_, stderr, code = runCLI(t, "store", "verify", dir, "--key-file", keyFile, "--config", conf)
			requireCode(t, code, 1, stderr)
			requireContains(t, "two key sources", stderr, "one way")

			blocks, err := filepath.Glob(filepath.Join(dir, "streams", "ORDERS", "msgs", "*.blk"))
			if err != nil || len(blocks) == 0 {
				t.Fatalf("blocks: %v %v", blocks, err)
			}
			sort.Strings(blocks)
			flipByte(t, blocks[0], 200)
			ckey := filepath.Join(dir, "streams", "ORDERS", "obs", "billing", "consumer.key")
			flipByte(t, ckey, -1)
			stdout, stderr, code = runCLI(t, "store", "verify", dir, "--key-file", keyFile)
			requireCode(t, code, exitDamaged, stderr)
			requireContains(t, "verify of a flipped byte", stdout, "DAMAGE: "+blocks[0]+": 1 corrupt records", "the first at offset ",
				"DAMAGE: "+ckey+": the key that opens the store's other encrypted directories does not open it", "DAMAGED")
			t.Logf("store verify of a damaged encrypted store:\n%s", stdout)
		})
	}
}
