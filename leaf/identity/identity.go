package identity

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/store/vfs"
)

// Modes of what Open creates.
const (
	// FileMode is the seed file's mode: it is a secret.
	FileMode = vfs.PermSecret
	// DirMode is the mode of the directories Open creates.
	DirMode = vfs.PermDir
)

// ServerNamePrefix starts every server name ServerName derives.
const ServerNamePrefix = "lb-"

// serverNameKeyChars is how many characters of the public key ServerName
// uses: 12 base32 characters, 60 random bits, keep two gateways of a
// fleet of a million apart with a chance of a collision below 1 in 10^6.
const serverNameKeyChars = 12

// maxSeedFile bounds what Load reads: a seed is 58 characters.
const maxSeedFile = 4 << 10

// ErrInvalid means the identity file exists but does not hold a server
// NKey seed. The error wrapping it names the file.
var ErrInvalid = errors.New("identity: invalid identity file")

// Identity is a gateway's identity: the public key of its NKey server key
// pair. Its methods are safe for concurrent use.
type Identity struct {
	path      string
	publicKey string
	generated bool
}

// Open loads the identity kept in the file path, generating a new key pair
// and writing its seed there when the file does not exist (see the package
// documentation for how). A file that exists but cannot be read or does
// not hold a server seed is an error naming path; it is never replaced.
func Open(fsys vfs.FS, path string) (*Identity, error) {
	id, err := Load(fsys, path)
	if !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	kp, err := nkeys.CreateServer()
	if err != nil {
		return nil, fmt.Errorf("identity: generate a key pair: %w", err)
	}
	defer kp.Wipe()
	seed, err := kp.Seed()
	if err != nil {
		return nil, fmt.Errorf("identity: generate a key pair: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("identity: generate a key pair: %w", err)
	}
	err = writeSeed(fsys, path, append(seed, '\n'))
	wipe(seed)
	if err != nil {
		return nil, err
	}
	return &Identity{path: path, publicKey: pub, generated: true}, nil
}

// Load reads the identity kept in the file path. A missing file is an
// error that matches fs.ErrNotExist; one that does not hold a server seed
// matches ErrInvalid. Every error names path.
func Load(fsys vfs.FS, path string) (*Identity, error) {
	f, err := fsys.Open(path)
	if err != nil {
		return nil, fmt.Errorf("identity: %w", err) // *fs.PathError names the file
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxSeedFile+1))
	if err != nil {
		return nil, fmt.Errorf("identity: read %s: %w", path, err)
	}
	defer wipe(b)
	if len(b) > maxSeedFile {
		return nil, fmt.Errorf("%w %s: larger than a seed (remove it to generate a new identity)", ErrInvalid, path)
	}
	seed := bytes.TrimSpace(b)
	// The reasons below never quote the file: it holds a secret.
	prefix, _, err := nkeys.DecodeSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("%w %s: not an NKey seed (remove it to generate a new identity)", ErrInvalid, path)
	}
	if prefix != nkeys.PrefixByteServer {
		return nil, fmt.Errorf("%w %s: the seed is of a %s key, want a server key (remove it to generate a new identity)",
			ErrInvalid, path, prefix)
	}
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		return nil, fmt.Errorf("%w %s: not an NKey seed (remove it to generate a new identity)", ErrInvalid, path)
	}
	defer kp.Wipe()
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrInvalid, path, err)
	}
	return &Identity{path: path, publicKey: pub}, nil
}

// writeSeed writes data to path atomically and durably with FileMode,
// creating its directory with DirMode (vfs.WriteFilePerm).
func writeSeed(fsys vfs.FS, path string, data []byte) error {
	if err := vfs.WriteFilePerm(fsys, path, data, FileMode); err != nil {
		return fmt.Errorf("identity: %w", err)
	}
	return nil
}

// wipe overwrites b, which held a secret.
func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}

// PublicKey returns the public key of the gateway's key pair: 56
// characters starting with 'N'.
func (id *Identity) PublicKey() string { return id.publicKey }

// Path returns the file the identity is kept in.
func (id *Identity) Path() string { return id.path }

// Generated reports whether Open generated the identity, this being the
// gateway's first start with this store directory.
func (id *Identity) Generated() bool { return id.generated }

// ServerName returns the default server name derived from the public key:
// ServerNamePrefix followed by 12 characters of the key in lower case
// ("lb-" and then [a-z2-7]), stable for the identity's life. It skips the
// key's first two characters: the first is the prefix 'N' and the second
// holds only two bits of the key.
func (id *Identity) ServerName() string {
	return ServerNamePrefix + strings.ToLower(id.publicKey[2:2+serverNameKeyChars])
}
