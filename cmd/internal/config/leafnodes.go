package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/leaf"
	"github.com/nats-io/nkeys"
)

// DefaultLeafPort is the leafnode port used when leafnodes.listen gives
// only a host.
const DefaultLeafPort = 7422

// DefaultLeafHost is the leafnode listen host when leafnodes.listen gives
// only a port and no client host is known; SetDefaults makes such a
// listener follow the client listener's host instead.
const DefaultLeafHost = "0.0.0.0"

// LeafNodesConfig is the leafnodes block: the hubs this gateway connects
// to as a leaf node, and the port other leafs attach to.
type LeafNodesConfig struct {
	// Remotes are the hubs to connect to, one link each.
	Remotes []RemoteConfig `yaml:"remotes,omitempty"`
	// Listen accepts leaf connections (nats-server or leafbox remotes) on
	// "host:port", "host" or a port; the host defaults to the client
	// listener's (listen, --addr), the port to 7422, and -1 picks a free
	// port.
	Listen HostPort `yaml:"listen,omitempty"`
	// Authorization is what attaching leafs must present.
	Authorization *LeafAuthorizationConfig `yaml:"authorization,omitempty"`
	// TLS makes attaching leafs use TLS (verify checks their certificates).
	TLS *TLSConfig `yaml:"tls,omitempty"`
	// Compression is the S2 mode offered to attaching leafs (default
	// s2_auto), with the values of a remote's compression.
	Compression string `yaml:"compression,omitempty"`
}

// RemoteConfig is one leafnode remote: a hub (one or more URLs of the same
// hub cluster, tried in order with failover), how to authenticate to it,
// and the local account the link is bound to.
type RemoteConfig struct {
	// Name identifies the remote for uplinks[].remote and
	// downlinks[].remote; optional.
	Name string `yaml:"name,omitempty"`
	// URLs of the hub's leafnode port (nats-leaf, nats or tls scheme); URL
	// adds one more after them. User info in a URL is sent as user and
	// password, or as a token when there is no password.
	URLs StringList `yaml:"urls,omitempty"`
	URL  string     `yaml:"url,omitempty"`
	// Credentials is a .creds file (user JWT and NKey seed) to
	// authenticate with. It is read again on every connect.
	Credentials string `yaml:"credentials,omitempty"`
	// Nkey is a file holding a user NKey seed (SU...): the link signs the
	// hub's nonce with it. It cannot be combined with credentials.
	Nkey string `yaml:"nkey,omitempty"`
	// Account is the local account bound to the remote; empty is the
	// global account.
	Account string `yaml:"account,omitempty"`
	// TLS makes the link use TLS and configures the client side of it.
	TLS *RemoteTLSConfig `yaml:"tls,omitempty"`
	// Compression is the S2 compression mode: off, accept, s2_auto (the
	// default), s2_uncompressed, s2_fast, s2_better or s2_best, or one of
	// their aliases (on, auto, fast, better, best, uncompressed, disabled).
	Compression string `yaml:"compression,omitempty"`
	// DenyImports lists subjects the hub must not send to this gateway.
	DenyImports StringList `yaml:"deny_imports,omitempty"`
	// DenyExports lists subjects this gateway never sends to the hub.
	DenyExports StringList `yaml:"deny_exports,omitempty"`
	// PingInterval is how often the link PINGs the hub (default 30s); a
	// link that misses MaxPingsOut PONGs in a row (default 2) is closed as
	// stale and reconnected. Shorten them to notice a dead mobile link (a
	// blackhole that keeps the TCP connection open) sooner.
	PingInterval Duration `yaml:"ping_interval,omitempty"`
	MaxPingsOut  int      `yaml:"max_pings_out,omitempty"`
}

// LeafAuthorizationConfig is the authorization block of leafnodes: what an
// attaching leaf must present. One user and password, one token or one
// nkey (bound to account), or a list of users each bound to its account,
// as in nats-server's leafnodes.authorization.
type LeafAuthorizationConfig struct {
	// User and Password define a single user.
	User     string `yaml:"user,omitempty"`
	Password string `yaml:"password,omitempty"`
	// Token is a shared secret sent as auth_token; it may be a bcrypt hash.
	Token string `yaml:"token,omitempty"`
	// Nkey is a single user public NKey; the leaf signs our nonce.
	Nkey string `yaml:"nkey,omitempty"`
	// Account binds the single user, token or nkey (and leafs without
	// credentials when nothing is configured) to a local account; empty is
	// the global account.
	Account string `yaml:"account,omitempty"`
	// Users lists users (user and password, or nkey), each bound to the
	// account it names.
	Users []UserConfig `yaml:"users,omitempty"`
	// Timeout bounds the wait for CONNECT (default 2s).
	Timeout Duration `yaml:"timeout,omitempty"`
}

// hubURLs returns the remote's URLs in the order they are tried.
func (r *RemoteConfig) hubURLs() []string {
	urls := append([]string(nil), r.URLs...)
	if r.URL != "" {
		urls = append(urls, r.URL)
	}
	return urls
}

// RemoteIndex returns the index of the leafnode remote called name, the
// first one for "", or -1 when there is none.
func (c *Config) RemoteIndex(name string) int {
	if c.LeafNodes == nil || len(c.LeafNodes.Remotes) == 0 {
		return -1
	}
	if name == "" {
		return 0
	}
	for i, r := range c.LeafNodes.Remotes {
		if r.Name == name {
			return i
		}
	}
	return -1
}

// LeafConfig maps a leafnode remote to the link's configuration, with the
// paths resolved against the configuration file. The caller adds what
// needs the running broker or the files: ServerID and TLS; the leaf
// runtime adds the uplinks' and downlinks' loop-prevention denies
// (leaf/node).
func (c *Config) LeafConfig(r *RemoteConfig) leaf.Config {
	compression, err := leaf.NormalizeCompression(r.Compression)
	if err != nil {
		compression = r.Compression // Validate reports it
	}
	lc := leaf.Config{
		URLs:         r.hubURLs(),
		Account:      r.Account,
		Credentials:  c.Path(r.Credentials),
		NkeySeedFile: c.Path(r.Nkey),
		Compression:  compression,
		DenyImports:  slices.Clone([]string(r.DenyImports)),
		DenyExports:  slices.Clone([]string(r.DenyExports)),
		Name:         c.ServerName,
		PingInterval: time.Duration(r.PingInterval),
		MaxPingsOut:  r.MaxPingsOut,
	}
	if js := c.JetStream; js != nil && js.Enabled {
		lc.Domain = js.Domain
		// The JetStream engine serves the global account only.
		lc.JetStream = r.Account == "" || r.Account == auth.GlobalAccount
	}
	return lc
}

// LeafListenAddr returns the listener's "host:port" (port 0 for -1), or
// "" when leafnodes.listen is not set.
func (c *Config) LeafListenAddr() string {
	ln := c.LeafNodes
	if ln == nil || ln.Listen.IsZero() {
		return ""
	}
	host := ln.Listen.Host
	if host == "" {
		host = DefaultLeafHost
	}
	port := DefaultLeafPort
	if ln.Listen.Port != nil {
		port = max(*ln.Listen.Port, 0)
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// LeafAuth converts leafnodes.authorization; nil when absent.
func (c *Config) LeafAuth() *auth.Config {
	la := c.LeafNodes.Authorization
	if la == nil || (la.User == "" && la.Token == "" && la.Nkey == "" && len(la.Users) == 0) {
		return nil
	}
	ac := &auth.Config{Token: la.Token}
	if la.User != "" {
		ac.Users = append(ac.Users, auth.User{Name: la.User, Password: la.Password, Account: la.Account})
	}
	if la.Nkey != "" {
		ac.Users = append(ac.Users, auth.User{Nkey: la.Nkey, Account: la.Account})
	}
	for _, u := range la.Users {
		ac.Users = append(ac.Users, auth.User{Name: u.User, Password: u.Password, Nkey: u.Nkey, Account: u.Account})
	}
	for _, name := range sortedKeys(c.Accounts) {
		ac.Accounts = append(ac.Accounts, auth.Account{Name: name})
	}
	return ac
}

// RedactURL replaces the password of a URL's user info with
// "[REDACTED]", or the user when it stands alone (a leafnode remote sends
// a lone user as a token). A URL that does not parse is returned unchanged:
// Validate rejects it.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	user := RedactedSecret
	if _, ok := u.User.Password(); ok {
		user = url.User(u.User.Username()).String() + ":" + RedactedSecret
	}
	u.User = nil
	prefix := u.Scheme + "://"
	return prefix + user + "@" + strings.TrimPrefix(u.String(), prefix)
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

// leafListen validates leafnodes.listen, authorization, tls and
// compression.
func (v *validator) leafListen(ln *LeafNodesConfig) {
	if ln.Listen.IsZero() {
		if ln.Authorization != nil || ln.TLS != nil || ln.Compression != "" {
			v.errf("leafnodes", "authorization, tls and compression configure leafnodes.listen, which is not set")
		}
		return
	}
	if p := ln.Listen.Port; p != nil && (*p < -1 || *p > 65535) {
		v.errf("leafnodes.listen", "port %d out of range (-1 picks a free port)", *p)
	}
	if ln.Compression != "" {
		if _, err := leaf.NormalizeCompression(ln.Compression); err != nil {
			v.errf("leafnodes.compression", "%q is not one of off, accept, s2_auto, s2_uncompressed, s2_fast, s2_better, s2_best", ln.Compression)
		}
	}
	if la := ln.Authorization; la != nil {
		if la.Account != "" {
			if _, ok := v.c.Accounts[la.Account]; !ok && la.Account != auth.GlobalAccount {
				v.errf("leafnodes.authorization.account", "%q is not listed under accounts", la.Account)
			}
		}
		if la.Password != "" && la.User == "" {
			v.errf("leafnodes.authorization.password", "set without user")
		}
		if la.Timeout < 0 {
			v.errf("leafnodes.authorization.timeout", "must not be negative")
		}
		for i, u := range la.Users {
			if u.Permissions != nil {
				v.errf(fmt.Sprintf("leafnodes.authorization.users[%d].permissions", i), "permissions for leaf users are not supported yet")
			}
		}
		if ac := v.c.LeafAuth(); ac != nil {
			if err := ac.Validate(); err != nil {
				v.err("leafnodes.authorization", err)
			}
		}
	}
	if ln.TLS != nil {
		_, problems := v.c.buildTLS("leafnodes.tls", ln.TLS, true)
		v.problems = append(v.problems, problems...)
	}
}
