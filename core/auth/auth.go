package auth

import (
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/nats-io/nkeys"
)

// ErrAuthorization is returned (wrapped, with the reason) by Authenticate
// when a client's credentials are refused. The server answers any such
// error with -ERR 'Authorization Violation' and closes the connection; the
// reason is for its log only.
var ErrAuthorization = errors.New("auth: authorization violation")

// ErrInvalidConfig is wrapped by every error New returns.
var ErrInvalidConfig = errors.New("auth: invalid config")

// Identity is who an authenticated connection is.
type Identity struct {
	// User is the user name, the public key of an NKey user, or "" when no
	// authentication is configured.
	User string
	// Account is the account the connection is bound to.
	Account string
	// Perms are the user's permissions; nil allows everything. They are
	// shared by every connection of the user.
	Perms *Perms
}

// Authenticator checks client credentials against a Config. It is
// immutable after New and safe for concurrent use.
type Authenticator struct {
	token      string
	users      map[string]*user // by name
	nkeyUsers  map[string]*user // by public key
	noAuthUser *user
	accounts   []string // GlobalAccount first, then the configured ones
}

// user is one compiled User.
type user struct {
	id       string // name, or public key of an nkey user
	password string
	verifier nkeys.KeyPair // set for nkey users
	account  string
	perms    *Perms
}

func (u *user) identity() *Identity {
	return &Identity{User: u.id, Account: u.account, Perms: u.perms}
}

// New validates cfg and returns an Authenticator for it. Errors wrap
// ErrInvalidConfig and name the offending entry. cfg is not retained.
func New(cfg Config) (*Authenticator, error) {
	a := &Authenticator{
		token:     cfg.Token,
		users:     make(map[string]*user),
		nkeyUsers: make(map[string]*user),
		accounts:  []string{GlobalAccount},
	}

	known := map[string]bool{GlobalAccount: true}
	listed := make(map[string]bool)
	for i, acc := range cfg.Accounts {
		switch {
		case acc.Name == "":
			return nil, configError("accounts[%d]: empty account name", i)
		case strings.ContainsFunc(acc.Name, unicode.IsSpace):
			return nil, configError("account %q: name contains whitespace", acc.Name)
		case listed[acc.Name]:
			return nil, configError("duplicate account %q", acc.Name)
		}
		listed[acc.Name] = true
		if !known[acc.Name] {
			known[acc.Name] = true
			a.accounts = append(a.accounts, acc.Name)
		}
	}

	numUsers := len(cfg.Users)
	for _, acc := range cfg.Accounts {
		numUsers += len(acc.Users)
	}
	if cfg.Token != "" {
		if numUsers > 0 {
			return nil, configError("token cannot be combined with users")
		}
		if IsBcrypt(cfg.Token) {
			if err := checkBcrypt(cfg.Token); err != nil {
				return nil, configError("token looks like a bcrypt hash but is not one: %v", err)
			}
		}
	}

	for i, u := range cfg.Users {
		if err := a.addUser(u, fmt.Sprintf("users[%d]", i), "", known); err != nil {
			return nil, err
		}
	}
	for _, acc := range cfg.Accounts {
		for i, u := range acc.Users {
			if err := a.addUser(u, fmt.Sprintf("account %q users[%d]", acc.Name, i), acc.Name, known); err != nil {
				return nil, err
			}
		}
	}

	if name := cfg.NoAuthUser; name != "" {
		if numUsers == 0 {
			return nil, configError("NoAuthUser %q set but no users are configured", name)
		}
		a.noAuthUser = a.users[name]
		if a.noAuthUser == nil {
			a.noAuthUser = a.nkeyUsers[name]
		}
		if a.noAuthUser == nil {
			return nil, configError("NoAuthUser %q is not a configured user name or nkey", name)
		}
	}
	return a, nil
}

// addUser validates u and adds it. where locates u in the config for error
// messages; listedIn is the account whose Users list holds u, if any.
func (a *Authenticator) addUser(u User, where, listedIn string, known map[string]bool) error {
	c := &user{id: u.Name, password: u.Password}
	label := where
	switch {
	case u.Nkey != "":
		if u.Name != "" || u.Password != "" {
			return configError("%s: nkey users take no name or password", where)
		}
		if err := checkUserNkey(u.Nkey); err != nil {
			return configError("%s: %v", where, err)
		}
		kp, err := nkeys.FromPublicKey(u.Nkey)
		if err != nil { // unreachable after checkUserNkey
			return configError("%s: nkey: %v", where, err)
		}
		c.id, c.verifier = u.Nkey, kp
		label = fmt.Sprintf("nkey user %q", u.Nkey)
		if a.nkeyUsers[u.Nkey] != nil {
			return configError("duplicate nkey %q", u.Nkey)
		}
	case u.Name != "":
		label = fmt.Sprintf("user %q", u.Name)
		if a.users[u.Name] != nil {
			return configError("duplicate user %q", u.Name)
		}
		if IsBcrypt(u.Password) {
			if err := checkBcrypt(u.Password); err != nil {
				return configError("%s: password looks like a bcrypt hash but is not one: %v", label, err)
			}
		}
	default:
		return configError("%s: user has neither a name nor an nkey", where)
	}

	c.account = u.Account
	if listedIn != "" {
		if u.Account != "" && u.Account != listedIn {
			return configError("%s: listed in account %q but bound to account %q", label, listedIn, u.Account)
		}
		c.account = listedIn
	}
	if c.account == "" {
		c.account = GlobalAccount
	}
	if !known[c.account] {
		return configError("%s: unknown account %q", label, c.account)
	}

	perms, err := compilePerms(u.Permissions)
	if err != nil {
		return configError("%s: %v", label, err)
	}
	c.perms = perms

	if c.verifier != nil {
		a.nkeyUsers[c.id] = c
	} else {
		a.users[c.id] = c
	}
	return nil
}

// checkUserNkey reports why key is not a user public key. It never quotes
// key, which might be a seed pasted by mistake.
func checkUserNkey(key string) error {
	if nkeys.IsValidPublicUserKey(key) {
		return nil
	}
	switch nkeys.Prefix(key) {
	case nkeys.PrefixByteSeed:
		return errors.New("nkey is a seed, not a public key; configure the public key")
	case nkeys.PrefixByteUnknown:
		return errors.New("nkey is not a valid public key")
	default:
		return errors.New("nkey is not a user public key (must start with 'U')")
	}
}

func configError(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
}

// Validate reports whether c is a valid configuration: it returns the error
// New would return.
func (c Config) Validate() error {
	_, err := New(c)
	return err
}

// Required reports whether clients must authenticate: a token or any user
// is configured. It stays true with a NoAuthUser, as nats-server's
// auth_required does.
func (a *Authenticator) Required() bool {
	return a.token != "" || len(a.users) > 0 || len(a.nkeyUsers) > 0
}

// NeedsNonce reports whether INFO must carry a nonce: some NKey user is
// configured.
func (a *Authenticator) NeedsNonce() bool { return len(a.nkeyUsers) > 0 }

// Accounts returns every account name: GlobalAccount first, then the
// configured accounts in order. The slice is the caller's.
func (a *Authenticator) Accounts() []string { return slices.Clone(a.accounts) }

// Authenticate checks c against the configuration. nonce is the nonce sent
// in INFO ("" if none); an NKey user must have signed its bytes.
//
// Without configured authentication it returns an anonymous Identity in
// GlobalAccount with nil Perms, whatever c holds. A client presenting no
// user, password, token or nkey is bound to the NoAuthUser if one is set.
// Otherwise an nkey selects an NKey user and must come with a valid
// signature, a user name selects a user and must come with the password,
// or the token must match. Failures return an error wrapping
// ErrAuthorization. The returned Identity is the caller's.
func (a *Authenticator) Authenticate(c Credentials, nonce string) (*Identity, error) {
	if !a.Required() {
		return &Identity{Account: GlobalAccount}, nil
	}
	if c.anonymous() {
		if a.noAuthUser != nil {
			return a.noAuthUser.identity(), nil
		}
		return nil, denied("no credentials")
	}
	if c.Nkey != "" && len(a.nkeyUsers) > 0 {
		u := a.nkeyUsers[c.Nkey]
		if u == nil {
			return nil, denied("unknown nkey %q", c.Nkey)
		}
		if err := verifyNonce(u.verifier, nonce, c.Sig); err != nil {
			return nil, denied("nkey %q: %v", c.Nkey, err)
		}
		return u.identity(), nil
	}
	if len(a.users) > 0 {
		if c.User == "" {
			return nil, denied("no user name")
		}
		u := a.users[c.User]
		if u == nil {
			return nil, denied("unknown user %q", c.User)
		}
		if !secretMatches(u.password, c.Pass) {
			return nil, denied("wrong password for user %q", c.User)
		}
		return u.identity(), nil
	}
	if a.token != "" {
		if c.Token == "" {
			return nil, denied("no token")
		}
		if !secretMatches(a.token, c.Token) {
			return nil, denied("wrong token")
		}
		return &Identity{Account: GlobalAccount}, nil
	}
	return nil, denied("no matching credentials")
}

// verifyNonce checks that sig, in raw-URL or standard base64, is the
// Ed25519 signature of nonce's bytes by key.
func verifyNonce(key nkeys.KeyPair, nonce, sig string) error {
	if sig == "" {
		return errors.New("signature missing")
	}
	if nonce == "" {
		return errors.New("no nonce was sent")
	}
	raw, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		if raw, err = base64.StdEncoding.DecodeString(sig); err != nil {
			return errors.New("signature is not base64")
		}
	}
	if err := key.Verify([]byte(nonce), raw); err != nil {
		return errors.New("signature does not verify")
	}
	return nil
}

func denied(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrAuthorization, fmt.Sprintf(format, args...))
}
