package identity

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/store/vfs"
)

func mustOpen(t *testing.T, fsys vfs.FS, path string) *Identity {
	t.Helper()
	id, err := Open(fsys, path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	return id
}

// TestOpenGeneratesOnceAndReloads: the first Open generates a server key
// pair and keeps its seed in a 0600 file under 0750 directories; every
// later Open and Load returns the same key and server name.
func TestOpenGeneratesOnceAndReloads(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "store", "state", "identity.nk")
	id := mustOpen(t, vfs.OS, path)
	if !id.Generated() || id.Path() != path {
		t.Fatalf("first Open: generated %v, path %q", id.Generated(), id.Path())
	}
	if !nkeys.IsValidPublicServerKey(id.PublicKey()) {
		t.Fatalf("public key %q is not a server key", id.PublicKey())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != FileMode {
		t.Errorf("seed file mode %v, want %v", fi.Mode().Perm(), FileMode)
	}
	for _, d := range []string{filepath.Dir(path), filepath.Dir(filepath.Dir(path))} {
		di, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if di.Mode().Perm() != DirMode {
			t.Errorf("directory %s mode %v, want %v", d, di.Mode().Perm(), DirMode)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		t.Fatalf("the file does not hold a seed: %v", err)
	}
	if pub, _ := kp.PublicKey(); pub != id.PublicKey() {
		t.Fatalf("the file's seed is of %s, Open returned %s", pub, id.PublicKey())
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("temporary file left behind: %v", err)
	}

	again := mustOpen(t, vfs.OS, path)
	loaded, err := Load(vfs.OS, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, other := range []*Identity{again, loaded} {
		if other.Generated() || other.PublicKey() != id.PublicKey() || other.ServerName() != id.ServerName() {
			t.Fatalf("reopened: generated %v, key %s name %s; want %s %s",
				other.Generated(), other.PublicKey(), other.ServerName(), id.PublicKey(), id.ServerName())
		}
	}
}

// TestServerName: "lb-" and 12 lowercase base32 characters of the key,
// distinct for distinct keys.
func TestServerName(t *testing.T) {
	valid := regexp.MustCompile(`^lb-[a-z2-7]{12}$`)
	seen := map[string]bool{}
	for i := range 50 {
		id := mustOpen(t, vfs.NewMem(), "identity.nk")
		name := id.ServerName()
		if !valid.MatchString(name) {
			t.Fatalf("server name %q", name)
		}
		if !strings.Contains(strings.ToLower(id.PublicKey()), name[len(ServerNamePrefix):]) {
			t.Fatalf("server name %q is not taken from the key %s", name, id.PublicKey())
		}
		if seen[name] {
			t.Fatalf("server name %q twice in %d keys", name, i+1)
		}
		seen[name] = true
	}
}

// TestOpenRefusesAnInvalidFile: a file that exists but holds no server
// seed is an error naming it, never replaced by a new identity, and the
// error does not quote the file.
func TestOpenRefusesAnInvalidFile(t *testing.T) {
	user, _ := nkeys.CreateUser()
	userSeed, _ := user.Seed()
	server, _ := nkeys.CreateServer()
	serverSeed, _ := server.Seed()
	damaged := []byte(string(serverSeed))
	damaged[10] ^= 1 // breaks the checksum
	for _, tc := range []struct {
		name, content, want string
	}{
		{"empty", "", "not an NKey seed"},
		{"garbage", "SECRET-NOT-A-SEED\n", "not an NKey seed"},
		{"truncated", string(serverSeed[:30]), "not an NKey seed"},
		{"bad checksum", string(damaged), "not an NKey seed"},
		{"user seed", string(userSeed), "want a server key"},
		{"public key", mustPublic(t, server), "not an NKey seed"},
		{"too large", strings.Repeat("S", maxSeedFile+10), "larger than a seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "identity.nk")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			for _, open := range []func(vfs.FS, string) (*Identity, error){Open, Load} {
				id, err := open(vfs.OS, path)
				if err == nil {
					t.Fatalf("opened %s as %s", tc.name, id.PublicKey())
				}
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %q: want ErrInvalid naming %s, saying %q", err, path, tc.want)
				}
				if len(tc.content) > 8 && strings.Contains(err.Error(), tc.content[:8]) {
					t.Fatalf("error %q quotes the file", err)
				}
			}
			b, _ := os.ReadFile(path)
			if string(b) != tc.content {
				t.Fatalf("the invalid file was replaced")
			}
		})
	}
}

func mustPublic(t *testing.T, kp nkeys.KeyPair) string {
	t.Helper()
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// TestLoadMissing: Load does not create, and says the file is missing.
func TestLoadMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "identity.nk")
	_, err := Load(vfs.OS, path)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load of a missing file: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load created the directory: %v", err)
	}
}

// TestOpenUnreadable: a file Open cannot read is an error naming it, not
// a reason to generate a new identity.
func TestOpenUnreadable(t *testing.T) {
	mem := vfs.NewMem()
	first := mustOpen(t, mem, "state/identity.nk")
	boom := errors.New("injected read error")
	fsys := vfs.Inject(mem, func(op vfs.Op, name string) error {
		if op == vfs.OpRead {
			return boom
		}
		return nil
	})
	if _, err := Open(fsys, "state/identity.nk"); !errors.Is(err, boom) || !strings.Contains(err.Error(), "state/identity.nk") {
		t.Fatalf("Open with a failing read: %v", err)
	}
	if again := mustOpen(t, mem, "state/identity.nk"); again.PublicKey() != first.PublicKey() {
		t.Fatal("the identity changed after a failed read")
	}
}

// TestOpenSurvivesPowerCut: once Open returned, the identity is durable;
// a power cut during a failed write leaves no identity (and no partial
// one), and the next Open generates one.
func TestOpenSurvivesPowerCut(t *testing.T) {
	mem := vfs.NewStrictMem()
	id := mustOpen(t, mem, "store/state/identity.nk")
	mem.ResetToSyncedState()
	if again := mustOpen(t, mem, "store/state/identity.nk"); again.Generated() || again.PublicKey() != id.PublicKey() {
		t.Fatalf("after a power cut: generated %v, key %s, want %s", again.Generated(), again.PublicKey(), id.PublicKey())
	}

	mem = vfs.NewStrictMem()
	failRename := vfs.Inject(mem, func(op vfs.Op, name string) error {
		if op == vfs.OpRename {
			return errors.New("injected rename error")
		}
		return nil
	})
	if _, err := Open(failRename, "state/identity.nk"); err == nil || !strings.Contains(err.Error(), "state/identity.nk") {
		t.Fatalf("Open with a failing rename: %v", err)
	}
	mem.ResetToSyncedState()
	if _, err := Load(mem, "state/identity.nk"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("after a failed write: %v", err)
	}
	if _, err := Load(mem, "state/identity.nk.tmp"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("temporary file left: %v", err)
	}
	if id := mustOpen(t, mem, "state/identity.nk"); !id.Generated() {
		t.Fatal("no identity generated after the failed write")
	}
}

// TestOpenReplacesAStaleTemporaryFile: a temporary file left by a crash,
// even with a wider mode, does not leak into the seed file's mode.
func TestOpenReplacesAStaleTemporaryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "identity.nk")
	if err := os.WriteFile(path+".tmp", []byte("stale"), 0o644); err != nil {
		t.Fatal(err)
	}
	mustOpen(t, vfs.OS, path)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != FileMode {
		t.Fatalf("seed file mode %v, want %v", fi.Mode().Perm(), FileMode)
	}
}
