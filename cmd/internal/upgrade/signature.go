// Package upgrade replaces leafbox's binary in place: it checks a new
// binary's signature (Ed25519 with an operator NKey, nkeys) and that it
// runs on this machine, swaps it in atomically keeping the old one
// (leafbox.prev), restarts the service, waits for the new one's /healthz,
// and puts the old one back when it does not come up healthy. The command
// is `leafbox upgrade` (cmd/internal/cli).
//
// # Signatures
//
// FILE.sig, written by `leafbox upgrade sign`, is a small text file:
//
//	leafbox-upgrade/1
//	key: O...
//	sha256: <hex digest of FILE>
//	size: <bytes>
//	sig: <base64 Ed25519 signature of the statement>
//
// where the statement signed is the first line and the sha256 and size
// lines, each ending in "\n" (Statement). A FILE.sig of one base64 line is
// also accepted: `nk -sign FILE -inkey operator.nk`'s output, a signature
// of FILE's bytes themselves, checked against every trusted key.
package upgrade

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nkeys"
)

// Format is the first line of a signature file.
const Format = "leafbox-upgrade/1"

// maxSigFile bounds what is read of a signature file.
const maxSigFile = 4 << 10

// Errors Verify wraps, for errors.Is.
var (
	// ErrUnsigned: there is no signature file.
	ErrUnsigned = errors.New("upgrade: unsigned")
	// ErrMalformed: the signature file cannot be read as one.
	ErrMalformed = errors.New("upgrade: malformed signature file")
	// ErrUntrusted: signed by a key not in upgrade.trusted_keys.
	ErrUntrusted = errors.New("upgrade: signed by an untrusted key")
	// ErrBadSignature: the signature does not match the file.
	ErrBadSignature = errors.New("upgrade: bad signature")
)

// Signature is a parsed signature file.
type Signature struct {
	Key    string // the operator public key; "" for an nk -sign signature
	SHA256 string // hex digest of the file; "" for an nk -sign signature
	Size   int64
	Sig    []byte
}

// Statement is what a signature file's sig signs.
func Statement(digest string, size int64) []byte {
	return fmt.Appendf(nil, "%s\nsha256: %s\nsize: %d\n", Format, digest, size)
}

// digestFile returns the hex SHA-256 and size of the file at path.
func digestFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// Sign signs the file at path with the operator seed and returns the
// signature file's text.
func Sign(seed []byte, path string) ([]byte, error) {
	seed = bytes.TrimSpace(seed)
	prefix, _, err := nkeys.DecodeSeed(seed)
	if err != nil {
		return nil, errors.New("upgrade: not an NKey seed")
	}
	if prefix != nkeys.PrefixByteOperator {
		return nil, fmt.Errorf("upgrade: the seed is of %s key, want an operator key (nk -gen operator)", prefix)
	}
	kp, err := nkeys.FromSeed(seed)
	if err != nil {
		return nil, err
	}
	defer kp.Wipe()
	digest, size, err := digestFile(path)
	if err != nil {
		return nil, fmt.Errorf("upgrade: %w", err)
	}
	sig, err := kp.Sign(Statement(digest, size))
	if err != nil {
		return nil, err
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return fmt.Appendf(nil, "%s\nkey: %s\nsha256: %s\nsize: %d\nsig: %s\n", Format, pub, digest, size,
		base64.StdEncoding.EncodeToString(sig)), nil
}

// ParseSignature parses a signature file's text.
func ParseSignature(data []byte) (*Signature, error) {
	if len(data) > maxSigFile {
		return nil, fmt.Errorf("%w: %d bytes, larger than a signature file", ErrMalformed, len(data))
	}
	text := strings.TrimSpace(string(data))
	if text == "" {
		return nil, fmt.Errorf("%w: empty", ErrMalformed)
	}
	if !strings.Contains(text, "\n") && !strings.HasPrefix(text, Format) {
		// nk -sign's output: the base64 signature of the file itself.
		sig, err := decodeSig(text)
		if err != nil {
			return nil, fmt.Errorf("%w: not %s and not a base64 signature (nk -sign): %v", ErrMalformed, Format, err)
		}
		return &Signature{Sig: sig}, nil
	}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Scan()
	if first := strings.TrimSpace(sc.Text()); first != Format {
		return nil, fmt.Errorf("%w: line 1: %q, want %q", ErrMalformed, first, Format)
	}
	s := &Signature{Size: -1}
	seen := map[string]bool{}
	for line := 2; sc.Scan(); line++ {
		k, v, ok := strings.Cut(sc.Text(), ":")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok {
			return nil, fmt.Errorf("%w: line %d: want key: value", ErrMalformed, line)
		}
		if seen[k] {
			return nil, fmt.Errorf("%w: line %d: %s given twice", ErrMalformed, line, k)
		}
		seen[k] = true
		switch k {
		case "key":
			s.Key = v
		case "sha256":
			if b, err := hex.DecodeString(v); err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("%w: line %d: sha256 is not 64 hex digits", ErrMalformed, line)
			}
			s.SHA256 = strings.ToLower(v)
		case "size":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%w: line %d: size %q is not a byte count", ErrMalformed, line, v)
			}
			s.Size = n
		case "sig":
			sig, err := decodeSig(v)
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: sig: %v", ErrMalformed, line, err)
			}
			s.Sig = sig
		default:
			return nil, fmt.Errorf("%w: line %d: unknown key %q", ErrMalformed, line, k)
		}
	}
	switch {
	case s.Key == "":
		return nil, fmt.Errorf("%w: no key line", ErrMalformed)
	case s.SHA256 == "":
		return nil, fmt.Errorf("%w: no sha256 line", ErrMalformed)
	case s.Size < 0:
		return nil, fmt.Errorf("%w: no size line", ErrMalformed)
	case s.Sig == nil:
		return nil, fmt.Errorf("%w: no sig line", ErrMalformed)
	}
	return s, nil
}

func decodeSig(v string) ([]byte, error) {
	sig, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		sig, err = base64.RawURLEncoding.DecodeString(v) // nk -sign writes URL-safe base64 without padding
	}
	if err != nil {
		return nil, errors.New("not base64")
	}
	if len(sig) != 64 {
		return nil, fmt.Errorf("%d bytes, an Ed25519 signature has 64", len(sig))
	}
	return sig, nil
}

// Verify checks the signature file sigPath of the file at path against
// the operator keys trusted, and returns the key that signed it. Every
// error says what is wrong: no signature file (ErrUnsigned), one that
// cannot be read (ErrMalformed), a key not trusted (ErrUntrusted), a
// signature or digest that does not match (ErrBadSignature).
func Verify(path, sigPath string, trusted []string) (string, error) {
	if len(trusted) == 0 {
		return "", fmt.Errorf("%w: no trusted keys: set upgrade.trusted_keys in the configuration (or --trusted-key)", ErrUntrusted)
	}
	data, err := os.ReadFile(sigPath)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %s has no signature file %s (make one with leafbox upgrade sign --seed OPERATOR.nk %s)", ErrUnsigned, path, sigPath, path)
	}
	if err != nil {
		return "", fmt.Errorf("upgrade: %w", err)
	}
	s, err := ParseSignature(data)
	if err != nil {
		return "", fmt.Errorf("%s: %w", sigPath, err)
	}
	if s.Key == "" {
		content, err := os.ReadFile(path)
		if err != nil {
			return "", fmt.Errorf("upgrade: %w", err)
		}
		for _, k := range trusted {
			if kp, err := nkeys.FromPublicKey(k); err == nil && kp.Verify(content, s.Sig) == nil {
				return k, nil
			}
		}
		return "", fmt.Errorf("%w: %s: the signature (nk -sign) matches %s under none of the %d trusted keys", ErrBadSignature, sigPath, path, len(trusted))
	}
	if !slices.Contains(trusted, s.Key) {
		return "", fmt.Errorf("%w: %s is signed by %s, which is not in upgrade.trusted_keys", ErrUntrusted, path, s.Key)
	}
	kp, err := nkeys.FromPublicKey(s.Key)
	if err != nil {
		return "", fmt.Errorf("%w: key %s: %v", ErrMalformed, s.Key, err)
	}
	if err := kp.Verify(Statement(s.SHA256, s.Size), s.Sig); err != nil {
		return "", fmt.Errorf("%w: %s: the signature does not match its statement under %s (altered or signed by another key)", ErrBadSignature, sigPath, s.Key)
	}
	digest, size, err := digestFile(path)
	if err != nil {
		return "", fmt.Errorf("upgrade: %w", err)
	}
	if digest != s.SHA256 || size != s.Size {
		return "", fmt.Errorf("%w: %s is not the file signed: sha256 %s (%d bytes), the signature is for %s (%d bytes)", ErrBadSignature, path, digest, size, s.SHA256, s.Size)
	}
	return s.Key, nil
}
