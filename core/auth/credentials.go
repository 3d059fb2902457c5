package auth

import (
	"fmt"
	"log/slog"
	"strconv"
)

// Credentials are what a client presented in CONNECT.
//
// Pass, Token, Sig and JWT are secrets: the String, Format and LogValue
// methods print only whether each is set, so a Credentials value may be
// passed to fmt or log/slog directly. (A JWT is redacted too because a
// bearer JWT authenticates on its own.)
type Credentials struct {
	// User is CONNECT user.
	User string
	// Pass is CONNECT pass.
	Pass string
	// Token is CONNECT auth_token.
	Token string
	// Nkey is CONNECT nkey, a user public key.
	Nkey string
	// Sig is CONNECT sig: the nonce signed with the user's seed, in base64
	// (raw URL or standard encoding).
	Sig string
	// JWT is CONNECT jwt. It is not used yet (no operator mode).
	JWT string
}

// String describes c without its secrets, for example
// {user="bob" nkey="" pass=set token=unset sig=unset jwt=unset}.
func (c Credentials) String() string {
	b := make([]byte, 0, 96)
	b = append(b, "{user="...)
	b = strconv.AppendQuote(b, c.User)
	b = append(b, " nkey="...)
	b = strconv.AppendQuote(b, c.Nkey)
	b = appendPresence(b, " pass=", c.Pass)
	b = appendPresence(b, " token=", c.Token)
	b = appendPresence(b, " sig=", c.Sig)
	b = appendPresence(b, " jwt=", c.JWT)
	b = append(b, '}')
	return string(b)
}

func appendPresence(b []byte, name, secret string) []byte {
	b = append(b, name...)
	if secret == "" {
		return append(b, "unset"...)
	}
	return append(b, "set"...)
}

// Format implements fmt.Formatter so that every verb, including %#v and
// %d, prints the redacted String form.
func (c Credentials) Format(f fmt.State, verb rune) {
	_, _ = f.Write([]byte(c.String()))
}

// LogValue implements slog.LogValuer: a group with the user, the nkey and
// whether each secret is set.
func (c Credentials) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("user", c.User),
		slog.String("nkey", c.Nkey),
		slog.Bool("pass", c.Pass != ""),
		slog.Bool("token", c.Token != ""),
		slog.Bool("sig", c.Sig != ""),
		slog.Bool("jwt", c.JWT != ""),
	)
}

// anonymous reports whether c carries none of the credentials that select
// a user. As in nats-server (auth.go processClientOrLeafAuthentication),
// Sig and JWT alone do not count.
func (c Credentials) anonymous() bool {
	return c.User == "" && c.Pass == "" && c.Token == "" && c.Nkey == ""
}
