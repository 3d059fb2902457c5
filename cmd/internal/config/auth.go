package config

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/nats-io/nkeys"
	"go.yaml.in/yaml/v3"
)

// AuthorizationConfig is the authorization block: one token, one user and
// password, or a list of users, as in nats-server.
type AuthorizationConfig struct {
	// Token is a shared secret clients send as auth_token; it may be a
	// bcrypt hash.
	Token string `yaml:"token,omitempty"`
	// User and Password define a single user.
	User     string `yaml:"user,omitempty"`
	Password string `yaml:"password,omitempty"`
	// Users lists users of the global account, or of the account they name.
	Users []UserConfig `yaml:"users,omitempty"`
	// Timeout bounds the wait for CONNECT (default 2s).
	Timeout Duration `yaml:"timeout,omitempty"`
}

// UserConfig is one user: user and password, or an nkey.
type UserConfig struct {
	// User is the name sent in CONNECT user.
	User string `yaml:"user,omitempty"`
	// Password is plain text or a bcrypt hash ($2a$...).
	Password string `yaml:"password,omitempty"`
	// Nkey is a user public NKey (starts with U); the client proves it by
	// signing the server's nonce.
	Nkey string `yaml:"nkey,omitempty"`
	// Account binds the user to an account listed under accounts.
	Account string `yaml:"account,omitempty"`
	// Permissions restrict the user; absent means everything is allowed.
	Permissions *PermissionsConfig `yaml:"permissions,omitempty"`
}

// AccountConfig is one account under accounts.
type AccountConfig struct {
	// Users belong to this account.
	Users []UserConfig `yaml:"users,omitempty"`
}

// PermissionsConfig restricts what a user may publish and subscribe to.
type PermissionsConfig struct {
	// Publish lists subjects the user may publish to.
	Publish *SubjectPermission `yaml:"publish,omitempty"`
	// Subscribe lists subjects the user may subscribe to; an entry may be
	// "subject queue" to name one queue group.
	Subscribe *SubjectPermission `yaml:"subscribe,omitempty"`
	// AllowResponses lets the user reply to requests it received even where
	// Publish denies the reply subject.
	AllowResponses *ResponsePermission `yaml:"allow_responses,omitempty"`
}

// SubjectPermission is an allow list and a deny list of subject patterns.
// In YAML it is a subject or a list of subjects (the allow list), or a
// mapping with allow and deny, each a subject or a list.
type SubjectPermission struct {
	// Allow lists permitted patterns; empty allows all not denied.
	Allow StringList `yaml:"allow,omitempty"`
	// Deny lists forbidden patterns; deny wins over allow.
	Deny StringList `yaml:"deny,omitempty"`
}

type subjectPermissionFields SubjectPermission

// UnmarshalYAML implements the callback form of yaml's unmarshaler, so that
// unknown keys in the mapping form are still rejected.
func (p *SubjectPermission) UnmarshalYAML(unmarshal func(any) error) error {
	var c nodeCapture
	if err := unmarshal(&c); err != nil {
		return err
	}
	switch c.node.Kind {
	case yaml.ScalarNode, yaml.SequenceNode:
		var allow StringList
		if err := unmarshal(&allow); err != nil {
			return err
		}
		*p = SubjectPermission{Allow: allow}
		return nil
	case yaml.MappingNode:
		return unmarshal((*subjectPermissionFields)(p))
	}
	return typeError(c.node, "invalid permission: want a subject, a list of subjects or {allow, deny}")
}

// ResponsePermission allows replies to received requests. In YAML it is
// true or false, or a mapping with max (responses per request, default 1)
// and expires (default 2m).
type ResponsePermission struct {
	// Enabled is false only for "allow_responses: false".
	Enabled bool `yaml:"-"`
	// Max is the number of responses allowed per request.
	Max int `yaml:"max,omitempty"`
	// Expires is how long the permission to respond lasts.
	Expires Duration `yaml:"expires,omitempty"`
}

type responsePermissionFields ResponsePermission

// UnmarshalYAML implements the callback form of yaml's unmarshaler.
func (r *ResponsePermission) UnmarshalYAML(unmarshal func(any) error) error {
	on, f, err := boolOrMapping[responsePermissionFields](unmarshal, "invalid allow_responses: want true, false or {max, expires}")
	switch {
	case err != nil:
		return err
	case f == nil:
		*r = ResponsePermission{Enabled: on}
	default:
		*r = ResponsePermission(*f)
		r.Enabled = true
	}
	return nil
}

// MarshalYAML writes true or false when neither max nor expires is set.
func (r ResponsePermission) MarshalYAML() (any, error) {
	if !r.Enabled || (r.Max == 0 && r.Expires == 0) {
		return r.Enabled, nil
	}
	return responsePermissionFields(r), nil
}

// Auth converts authorization, accounts and no_auth_user; nil when
// none is configured, which means no authentication.
func (c *Config) Auth() *auth.Config {
	ac := &auth.Config{NoAuthUser: c.NoAuthUser}
	if a := c.Authorization; a != nil {
		ac.Token = a.Token
		if a.User != "" {
			ac.Users = append(ac.Users, auth.User{Name: a.User, Password: a.Password})
		}
		for _, u := range a.Users {
			ac.Users = append(ac.Users, u.authUser())
		}
	}
	for _, name := range sortedKeys(c.Accounts) {
		acc := auth.Account{Name: name}
		for _, u := range c.Accounts[name].Users {
			acc.Users = append(acc.Users, u.authUser())
		}
		ac.Accounts = append(ac.Accounts, acc)
	}
	if ac.Token == "" && len(ac.Users) == 0 && len(ac.Accounts) == 0 && ac.NoAuthUser == "" {
		return nil
	}
	return ac
}

func (u UserConfig) authUser() auth.User {
	au := auth.User{Name: u.User, Password: u.Password, Nkey: u.Nkey, Account: u.Account}
	if p := u.Permissions; p != nil {
		au.Permissions = &auth.Permissions{
			Publish:   p.Publish.authPermission(),
			Subscribe: p.Subscribe.authPermission(),
		}
		if r := p.AllowResponses; r != nil && r.Enabled {
			au.Permissions.Response = &auth.ResponsePermission{MaxMsgs: r.Max, Expires: time.Duration(r.Expires)}
		}
	}
	return au
}

func (p *SubjectPermission) authPermission() *auth.SubjectPermission {
	if p == nil {
		return nil
	}
	return &auth.SubjectPermission{Allow: append([]string(nil), p.Allow...), Deny: append([]string(nil), p.Deny...)}
}

// authorization checks authorization, accounts and no_auth_user together:
// user names and nkeys must be unique across all of them.
func (v *validator) authorization() {
	c := v.c
	seen := map[string]string{} // user name or nkey -> path of first use
	a := c.Authorization
	userCount := 0
	if a != nil {
		if (a.User == "") != (a.Password == "") {
			if a.User == "" {
				v.errf("authorization.user", "missing (password is set)")
			} else {
				v.errf("authorization.password", "missing (user is set)")
			}
		}
		if a.User != "" && len(a.Users) > 0 {
			v.errf("authorization.user", "cannot be combined with users; add it to users")
		}
		if a.User != "" {
			seen[a.User] = "authorization.user"
			userCount++
		}
		for i := range a.Users {
			v.user(fmt.Sprintf("authorization.users[%d]", i), &a.Users[i], "", seen)
		}
		userCount += len(a.Users)
		if a.Timeout < 0 {
			v.errf("authorization.timeout", "must not be negative")
		}
	}
	for _, name := range sortedKeys(c.Accounts) {
		path := "accounts." + name
		if name == "" || strings.ContainsAny(name, " \t\r\n") {
			v.errf(path, "invalid account name %q", name)
		}
		users := c.Accounts[name].Users
		for i := range users {
			v.user(fmt.Sprintf("%s.users[%d]", path, i), &users[i], name, seen)
		}
		userCount += len(users)
	}
	if a != nil && a.Token != "" && userCount > 0 {
		v.errf("authorization.token", "cannot be combined with users")
	}
	if c.NoAuthUser != "" {
		_, byName := seen[c.NoAuthUser]
		_, byNkey := seen["nkey:"+c.NoAuthUser]
		if (!byName && !byNkey) || strings.HasPrefix(c.NoAuthUser, "nkey:") {
			v.errf("no_auth_user", "%q is not a configured user name or nkey", c.NoAuthUser)
		}
		if a != nil && a.Token != "" {
			v.errf("no_auth_user", "cannot be combined with authorization.token")
		}
	}
}

// authPackage runs the auth package's own validation as a final check, so
// that config check rejects whatever the broker would reject (bcrypt hashes
// that do not parse, for example). The checks above give precise paths for
// the common mistakes; this one can only point at the block.
func (v *validator) authPackage() {
	ac := v.c.Auth()
	if ac == nil {
		return
	}
	if err := ac.Validate(); err != nil {
		path := "authorization"
		if v.c.Authorization == nil {
			path = "accounts"
		}
		v.err(path, err)
	}
}

// user checks one user; inAccount is the account listing it, if any.
func (v *validator) user(path string, u *UserConfig, inAccount string, seen map[string]string) {
	switch {
	case u.Nkey != "":
		switch {
		case nkeys.IsValidPublicUserKey(u.Nkey):
		case nkeys.Prefix(u.Nkey) == nkeys.PrefixByteSeed:
			// Never quote the value: it is a secret pasted by mistake.
			v.errf(path+".nkey", "is a seed, not a public key; configure the public key (starts with U)")
		default:
			v.errf(path+".nkey", "not a valid user public nkey (56 characters starting with U)")
		}
		if u.User != "" {
			v.errf(path+".user", "cannot be combined with nkey")
		}
		if u.Password != "" {
			v.errf(path+".password", "cannot be combined with nkey")
		}
		key := "nkey:" + u.Nkey
		if first, dup := seen[key]; dup {
			v.errf(path+".nkey", "already used at %s", first)
		} else {
			seen[key] = path
		}
	case u.User == "":
		v.errf(path, "needs user and password, or nkey")
	default:
		if first, dup := seen[u.User]; dup {
			v.errf(path+".user", "%q is already defined at %s", u.User, first)
		} else {
			seen[u.User] = path
		}
	}
	if u.Account != "" {
		if _, ok := v.c.Accounts[u.Account]; !ok && u.Account != auth.GlobalAccount {
			v.errf(path+".account", "%q is not listed under accounts", u.Account)
		} else if inAccount != "" && u.Account != inAccount {
			v.errf(path+".account", "%q differs from the account %q that lists the user", u.Account, inAccount)
		}
	}
	if p := u.Permissions; p != nil {
		v.subjects(path+".permissions.publish", p.Publish, false)
		v.subjects(path+".permissions.subscribe", p.Subscribe, true)
		if r := p.AllowResponses; r != nil {
			if r.Max < 0 {
				v.errf(path+".permissions.allow_responses.max", "must not be negative")
			}
			if r.Expires < 0 {
				v.errf(path+".permissions.allow_responses.expires", "must not be negative")
			}
		}
	}
}

// subjects checks a permission's patterns; subscribe entries may be
// "subject queue".
func (v *validator) subjects(path string, p *SubjectPermission, queues bool) {
	if p == nil {
		return
	}
	for _, list := range []struct {
		name string
		subs StringList
	}{{"allow", p.Allow}, {"deny", p.Deny}} {
		for i, s := range list.subs {
			at := fmt.Sprintf("%s.%s[%d]", path, list.name, i)
			if short := fmt.Sprintf("%s[%d]", path, i); !v.c.index.has(at) {
				if list.name == "allow" && v.c.index.has(short) {
					at = short // written as a plain list
				} else {
					at = path // written as a single subject
				}
			}
			subj, queue, hasQueue := strings.Cut(strings.TrimSpace(s), " ")
			queue = strings.TrimSpace(queue)
			switch {
			case !subject.Valid(subj):
				v.errf(at, "invalid subject %q", s)
			case hasQueue && !queues:
				v.errf(at, "invalid subject %q (queue groups only apply to subscribe)", s)
			case hasQueue && !subject.ValidQueue(queue):
				v.errf(at, "invalid queue group in %q", s)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
