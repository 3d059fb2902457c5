package auth

import "time"

// GlobalAccount is the account users belong to when none is named, as in
// nats-server.
const GlobalAccount = "$G"

// Config is the authentication and authorization configuration of a
// server's client port. The zero value requires no authentication.
type Config struct {
	// Token, when set, is the one token every client must present in
	// CONNECT auth_token. It may be a bcrypt hash. It cannot be combined
	// with Users.
	Token string
	// Users may connect with a user name and password, or with an NKey.
	// Users without an Account belong to GlobalAccount.
	Users []User
	// Accounts lists the accounts users may be bound to. Subjects are
	// isolated between accounts.
	Accounts []Account
	// NoAuthUser names a configured user (by Name, or by Nkey for an NKey
	// user) that connections presenting no credentials are bound to.
	NoAuthUser string
}

// Account is an isolated subject namespace.
type Account struct {
	// Name is the account's unique name.
	Name string
	// Users belong to this account.
	Users []User
}

// User is one set of credentials: Name with Password, or Nkey.
type User struct {
	// Name is the user name sent in CONNECT user.
	Name string
	// Password is compared in constant time, or with bcrypt when it is a
	// bcrypt hash ($2a$, $2b$, $2x$, $2y$).
	Password string
	// Nkey is a user public NKey (56 characters starting with 'U'); such a
	// user authenticates by signing the server's nonce and has no Name or
	// Password.
	Nkey string
	// Account the user is bound to; empty means the account that lists the
	// user, or GlobalAccount.
	Account string
	// Permissions restrict what the user may publish and subscribe to; nil
	// allows everything.
	Permissions *Permissions
}

// Permissions are a user's publish, subscribe and response rights.
type Permissions struct {
	// Publish restricts publish subjects.
	Publish *SubjectPermission
	// Subscribe restricts subscription subjects. An entry may be
	// "subject queue" to allow or deny one queue group only.
	Subscribe *SubjectPermission
	// Response, when set, allows publishing to the reply subjects of
	// received requests, even if Publish would deny them. Without a
	// Publish allow list it also denies publishing anywhere else, as in
	// nats-server.
	Response *ResponsePermission
}

// SubjectPermission is a pair of allow and deny lists of subject patterns.
// An empty Allow allows everything not denied; Deny wins over Allow.
type SubjectPermission struct {
	Allow []string
	Deny  []string
}

// ResponsePermission bounds the responses allowed per received request.
type ResponsePermission struct {
	// MaxMsgs is the number of responses allowed per request; 0 means the
	// default, 1. Negative values are rejected.
	MaxMsgs int
	// Expires is how long the permission lasts; 0 means the default, 2
	// minutes. Negative values are rejected.
	Expires time.Duration
}
