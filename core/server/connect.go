package server

import (
	"encoding/json"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/proto"
)

// processConnect handles CONNECT: it checks the options, authenticates and
// binds the connection to its account. It returns false when the
// connection must close.
func (c *client) processConnect(arg []byte) bool {
	if c.connected.Load() {
		// nats-server accepts a repeated CONNECT but changes nothing that
		// matters here; ignore it.
		return true
	}
	// Absent fields take nats-server's defaults.
	co := proto.Connect{Verbose: true, Pedantic: true, Echo: true}
	if err := json.Unmarshal(arg, &co); err != nil {
		c.sendErrAndClose("Unknown Protocol Operation", reasonParseError)
		return false
	}
	switch {
	case co.Protocol < 0 || co.Protocol > 1:
		c.sendErrAndClose("invalid client protocol", reasonBadProtocol)
		return false
	case co.NoResponders && !co.Headers:
		c.sendErrAndClose("no responders requires headers support", reasonProtocolViolation)
		return false
	case co.Account != "" || co.NewAccount:
		c.sendErrAndClose("Authorization Violation", reasonAuthViolation)
		return false
	}
	opts := c.srv.options()
	if opts.TLSRequired && c.tlsConn == nil {
		c.sendErrAndClose("Secure Connection - TLS Required", reasonTLSRequired)
		return false
	}
	creds := auth.Credentials{
		User: co.User, Pass: co.Pass, Token: co.AuthToken,
		Nkey: co.Nkey, Sig: co.Sig, JWT: co.JWT,
	}
	id, err := c.srv.authHandler.Load().Authenticate(creds, c.nonce)
	if err != nil {
		c.srv.warnLimited(c.srv.authWarns, "authentication failed", func() []any {
			user := creds.User
			if user == "" {
				user = creds.Nkey
			}
			// err names the user or key and the cause, never a secret.
			return []any{"cid", c.cid, "addr", c.remoteAddr(), "name", co.Name, "user", user, "error", err}
		})
		c.sendErrAndClose("Authorization Violation", reasonAuthViolation)
		return false
	}
	acc := c.srv.lookupAccount(id.Account)
	headers := co.Headers && !opts.NoHeaderSupport
	c.mu.Lock()
	c.connectOpts = co
	c.creds = creds
	c.ident.Store(id)
	c.acc = acc
	c.echo = co.Echo
	c.headers = headers
	c.noResponders = co.NoResponders && headers
	c.verbose = co.Verbose
	c.pedantic = co.Pedantic
	c.connected.Store(true)
	if c.authTimer != nil {
		c.authTimer.Stop()
	}
	if c.verbose {
		c.out = append(c.out, proto.OKLine...)
	}
	c.mu.Unlock()
	c.flushes[c] = struct{}{}
	c.logConnected()
	return true
}

// reauthorize re-checks a connection after a configuration reload: it
// closes the connection when its credentials no longer authenticate or its
// account changed, and removes subscriptions the new permissions deny.
func (c *client) reauthorize(authn *auth.Authenticator) {
	c.mu.Lock()
	if !c.connected.Load() || c.closing {
		c.mu.Unlock()
		return
	}
	creds, oldAcc := c.creds, c.acc
	c.mu.Unlock()
	id, err := authn.Authenticate(creds, c.nonce)
	if err != nil || id.Account != oldAcc.name {
		c.sendErrAndClose("Authorization Violation", reasonAuthViolation)
		return
	}
	c.ident.Store(id)
	c.mu.Lock()
	var denied []*subscription
	for sid, sub := range c.subs {
		if !id.Perms.CanSubscribe(sub.subject, sub.queue) {
			denied = append(denied, sub)
			delete(c.subs, sid)
		}
	}
	for _, sub := range denied {
		c.out = appendSubViolation(c.out, sub.subject, sub.queue)
	}
	c.cond.Signal()
	c.mu.Unlock()
	oldAcc.removeSubs(denied)
}

func appendSubViolation(dst []byte, subject, queue string) []byte {
	text := `Permissions Violation for Subscription to "` + subject + `"`
	if queue != "" {
		text += ` using queue "` + queue + `"`
	}
	return proto.AppendErr(dst, text)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("server: cannot encode " + err.Error())
	}
	return b
}
