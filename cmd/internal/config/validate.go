package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/store/jsapi"
)

// maxPayloadLimit is nats-server's hard upper bound for max_payload.
const maxPayloadLimit = 64 << 20

// validator collects every problem of a Config instead of stopping at the
// first one.
type validator struct {
	c        *Config
	problems []*FieldError
}

func (v *validator) errf(path, format string, args ...any) {
	v.problems = append(v.problems, v.c.fieldErr(path, fmt.Errorf(format, args...)))
}

func (v *validator) err(path string, err error) {
	v.problems = append(v.problems, v.c.fieldErr(path, err))
}

// Validate reports every problem of c as a *Error whose entries carry
// the key path and, for values from a file, the line. Call SetDefaults
// first: Validate checks effective values. It reads the files that c names
// (certificates, credentials) to check them.
func (c *Config) Validate() error {
	v := &validator{c: c}
	v.listeners()
	v.limits()
	v.authorization()
	if c.TLS != nil {
		_, problems := c.buildTLS("tls", c.TLS, true)
		v.problems = append(v.problems, problems...)
	}
	v.jetStream()
	v.leafNodes()
	v.uplinks()
	v.downlinks()
	v.healthz()
	if len(v.problems) == 0 {
		v.authPackage()
	}
	err := newConfigError(v.problems)
	if ce, ok := err.(*Error); ok {
		ce.File = c.file
	}
	return err
}

func (v *validator) listeners() {
	c := v.c
	if err := checkHost(c.Listen.Host); err != nil {
		v.err("listen", err)
	}
	if c.Port < -1 || c.Port > 65535 {
		v.errf("port", "%d is out of range (1-65535, or -1 for a free port)", c.Port)
	}
	if err := checkHost(c.HTTP.Host); err != nil {
		v.err("http", err)
	}
	if c.HTTPPort != nil {
		p := *c.HTTPPort
		switch {
		case p < -1 || p > 65535:
			v.errf("http_port", "%d is out of range (1-65535, 0 to turn monitoring off, or -1 for a free port)", p)
		case p > 0 && p == c.Port:
			v.errf("http_port", "%d is also the client port", p)
		}
	}
	if strings.ContainsAny(c.ServerName, " \t\r\n") {
		v.errf("server_name", "%q must not contain whitespace", c.ServerName)
	}
}

func checkHost(host string) error {
	if host == "" {
		return errors.New("empty host")
	}
	if net.ParseIP(host) == nil && strings.ContainsAny(host, ":/ \t[]") {
		return fmt.Errorf("invalid host %q", host)
	}
	return nil
}

func (v *validator) limits() {
	c := v.c
	switch {
	case c.MaxPayload <= 0:
		v.errf("max_payload", "must be positive")
	case c.MaxPayload > maxPayloadLimit:
		v.errf("max_payload", "%v exceeds the limit of 64MiB", c.MaxPayload)
	case c.MaxPending > 0 && c.MaxPayload > c.MaxPending:
		v.errf("max_payload", "%v must not exceed max_pending (%v)", c.MaxPayload, c.MaxPending)
	}
	if c.MaxPending <= 0 {
		v.errf("max_pending", "must be positive")
	}
	if c.MaxControlLine <= 0 || c.MaxControlLine > math.MaxInt32 {
		v.errf("max_control_line", "must be between 1 and %d", math.MaxInt32)
	}
	nonNegative := []struct {
		path string
		val  int64
	}{
		{"max_connections", int64(c.MaxConnections)},
		{"max_subscriptions", int64(c.MaxSubscriptions)},
		{"ping_max", int64(c.PingMax)},
		{"lame_duck_grace_period", int64(c.LameDuckGracePeriod)},
	}
	for _, f := range nonNegative {
		if f.val < 0 {
			v.errf(f.path, "must not be negative")
		}
	}
	positive := []struct {
		path string
		val  Duration
	}{
		{"ping_interval", c.PingInterval},
		{"write_deadline", c.WriteDeadline},
		{"lame_duck_duration", c.LameDuckDuration},
	}
	for _, f := range positive {
		if f.val <= 0 {
			v.errf(f.path, "must be positive")
		}
	}
	if c.LameDuckGracePeriod >= c.LameDuckDuration && c.LameDuckDuration > 0 {
		v.errf("lame_duck_grace_period", "%v must be shorter than lame_duck_duration (%v)",
			c.LameDuckGracePeriod, c.LameDuckDuration)
	}
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

func (v *validator) jetStream() {
	js := v.c.JetStream
	if js == nil {
		return
	}
	if js.Enabled && js.StoreDir == "" {
		v.errf("jetstream.store_dir", "no default: neither $STATE_DIRECTORY nor $HOME is set; set store_dir or --store-dir")
	}
	if js.MaxMemoryStore < 0 {
		v.errf("jetstream.max_memory_store", "must not be negative")
	}
	if js.MaxFileStore < 0 {
		v.errf("jetstream.max_file_store", "must not be negative")
	}
	if js.SyncInterval < 0 && js.SyncInterval != SyncAlways {
		v.errf("jetstream.sync_interval", "must not be negative")
	}
	if err := jsapi.CheckName(js.Domain); js.Domain != "" && err != nil {
		v.errf("jetstream.domain", "%q is not a JetStream domain: %v", js.Domain, err)
	}
}

func (v *validator) leafNodes() {
	ln := v.c.LeafNodes
	if ln == nil {
		return
	}
	v.leafListen(ln)
	names := map[string]bool{}
	for i := range ln.Remotes {
		r := &ln.Remotes[i]
		path := fmt.Sprintf("leafnodes.remotes[%d]", i)
		before := len(v.problems)
		switch {
		case r.Name == "":
		case strings.ContainsAny(r.Name, " \t\r\n"):
			v.errf(path+".name", "%q must not contain whitespace", r.Name)
		case names[r.Name]:
			v.errf(path+".name", "%q is used twice", r.Name)
		}
		names[r.Name] = true
		if r.PingInterval != 0 && time.Duration(r.PingInterval) < 100*time.Millisecond {
			v.errf(path+".ping_interval", "%v is too short: at least 100ms", time.Duration(r.PingInterval))
		}
		if r.MaxPingsOut < 0 {
			v.errf(path+".max_pings_out", "must not be negative")
		}
		if r.URL == "" && len(r.URLs) == 0 {
			v.errf(path, "needs url or urls")
		}
		for j, u := range r.URLs {
			v.leafURL(fmt.Sprintf("%s.urls[%d]", path, j), u)
		}
		if r.URL != "" {
			v.leafURL(path+".url", r.URL)
		}
		if r.Credentials != "" {
			if err := checkCredsFile(v.c.Path(r.Credentials)); err != nil {
				v.err(path+".credentials", err)
			}
		}
		if r.Nkey != "" {
			if r.Credentials != "" {
				v.errf(path+".nkey", "cannot be combined with credentials")
			} else if err := checkSeedFile(r.Nkey, v.c.Path(r.Nkey)); err != nil {
				v.err(path+".nkey", err)
			}
		}
		if r.Account != "" {
			if _, ok := v.c.Accounts[r.Account]; !ok && r.Account != auth.GlobalAccount {
				v.errf(path+".account", "%q is not listed under accounts", r.Account)
			}
		}
		if _, err := leaf.NormalizeCompression(r.Compression); err != nil {
			v.errf(path+".compression", "%q is not one of off, accept, s2_auto, s2_uncompressed, s2_fast, s2_better, s2_best", r.Compression)
		}
		if r.TLS != nil {
			_, problems := v.c.buildTLS(path+".tls", r.TLS.tlsConfig(), false)
			v.problems = append(v.problems, problems...)
		}
		v.denyList(path+".deny_imports", r.DenyImports)
		v.denyList(path+".deny_exports", r.DenyExports)
		if len(v.problems) == before {
			// The link's own validation, as a final check that config
			// check rejects whatever leaf.New would.
			lc := v.c.LeafConfig(r)
			if err := lc.Validate(); err != nil {
				v.err(path, err)
			}
		}
	}
}

// leafURL checks one hub URL: the link dials scheme://[user[:pass]@]host[:port].
// Messages show the URL without its user info, which may be a secret.
func (v *validator) leafURL(path, raw string) {
	if !strings.Contains(raw, "://") {
		v.errf(path, "not a URL: want scheme://[user[:password]@]host[:port], such as nats-leaf://hub:7422")
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		v.errf(path, "invalid URL: %v", errors.Unwrap(err))
		return
	}
	shown := *u
	shown.User = nil
	switch u.Scheme {
	case "nats-leaf", "nats", "tls":
	case "ws", "wss":
		v.errf(path, "URL %q: websocket leafnodes are not supported yet", shown.String())
		return
	default:
		v.errf(path, "URL %q: scheme must be nats-leaf, nats or tls", shown.String())
		return
	}
	switch {
	case u.Hostname() == "":
		v.errf(path, "URL %q has no host", shown.String())
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		v.errf(path, "URL %q: want scheme://[user[:password]@]host[:port], without a path or query", shown.String())
	}
}

// denyList checks the subjects of a deny_imports or deny_exports list.
func (v *validator) denyList(path string, subjects StringList) {
	for i, s := range subjects {
		at := fmt.Sprintf("%s[%d]", path, i)
		if !v.c.index.has(at) {
			at = path // written as a single subject
		}
		if !subject.Valid(s) {
			v.errf(at, "invalid subject %q", s)
		}
	}
}

// checkCredsFile reads a .creds file and checks that it holds a user JWT
// and a user NKey seed. Errors never quote the file's content.
func checkCredsFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	defer clear(data)
	jwt, err := nkeys.ParseDecoratedJWT(data)
	if err != nil || strings.Count(jwt, ".") != 2 {
		return fmt.Errorf("%s holds no user JWT", path)
	}
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		return fmt.Errorf("%s holds no user NKey seed", path)
	}
	kp.Wipe()
	return nil
}

// checkSeedFile reads the seed file an nkey key names (resolved to path)
// and checks that it holds a user NKey seed. A seed pasted in place of the
// path is refused without being quoted.
func checkSeedFile(value, path string) error {
	if kp, err := nkeys.FromSeed([]byte(value)); err == nil {
		kp.Wipe()
		return errors.New("is a seed, not a file name; put the seed in a file and name the file here")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	defer clear(data)
	kp, err := nkeys.ParseDecoratedUserNKey(data)
	if err != nil {
		return fmt.Errorf("%s holds no user NKey seed (SU...)", path)
	}
	kp.Wipe()
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
