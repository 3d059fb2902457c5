package leaf

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/proto"
)

// ErrBadCredentials is wrapped by the errors for a .creds or seed file that
// cannot be used.
var ErrBadCredentials = errors.New("leaf: bad credentials")

// identity is what the link signs the hub's nonce with: a user JWT with its
// seed (.creds), or a bare user NKey seed.
type identity struct {
	jwt string
	kp  nkeys.KeyPair
}

// wipe erases the key material; the identity is unusable afterwards.
func (id *identity) wipe() {
	if id != nil && id.kp != nil {
		id.kp.Wipe()
	}
}

// loadIdentity reads the credentials the configuration names, or returns
// nil when it names none. Credentials take precedence over the seed file,
// as in nats-server. Files are read on every connect so they can be
// rotated; the file contents are wiped from memory after parsing.
func loadIdentity(cfg *Config) (*identity, error) {
	switch {
	case cfg.Credentials != "":
		return loadCreds(cfg.Credentials)
	case cfg.NkeySeedFile != "":
		return loadSeed(cfg.NkeySeedFile)
	}
	return nil, nil
}

// loadCreds parses a .creds file: a user JWT between "-----BEGIN NATS USER
// JWT-----" style fences, then a user seed (SU…) between seed fences.
func loadCreds(path string) (*identity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCredentials, err)
	}
	defer wipe(data)
	jwt, err := nkeys.ParseDecoratedJWT(data)
	if err != nil || strings.Count(jwt, ".") != 2 || strings.Contains(jwt, "\n") {
		return nil, fmt.Errorf("%w: %s: no user JWT", ErrBadCredentials, path)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadCredentials, path, err)
	}
	return &identity{jwt: jwt, kp: kp}, nil
}

// loadSeed reads a file holding a user NKey seed, alone or fenced as in a
// .creds file.
func loadSeed(path string) (*identity, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadCredentials, err)
	}
	defer wipe(data)
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadCredentials, path, err)
	}
	return &identity{kp: kp}, nil
}

// authenticate fills the authentication fields of a leaf CONNECT, as
// nats-server's solicited leaf does: the JWT (or the public NKey) with the
// nonce signed by the seed (base64url without padding), and in addition the
// user info of the URL: user and password, or a lone user name sent both as
// user and as auth_token.
func authenticate(c *proto.Connect, id *identity, r remote, nonce string) error {
	if id != nil {
		sig, err := id.kp.Sign([]byte(nonce))
		if err != nil {
			return fmt.Errorf("%w: signing the nonce: %v", ErrBadCredentials, err)
		}
		c.Sig = base64.RawURLEncoding.EncodeToString(sig)
		if id.jwt != "" {
			c.JWT = id.jwt
		} else {
			pub, err := id.kp.PublicKey()
			if err != nil {
				return fmt.Errorf("%w: %v", ErrBadCredentials, err)
			}
			c.Nkey = pub
		}
	}
	if u := r.url.User; u != nil {
		c.User = u.Username()
		if pass, ok := u.Password(); ok {
			c.Pass = pass
		} else {
			c.AuthToken = c.User
		}
	}
	return nil
}

// wipe overwrites b, which held secrets.
func wipe(b []byte) {
	for i := range b {
		b[i] = 'x'
	}
}
