// Package auth authenticates client connections and compiles their
// permissions, following nats-server v2.15.2 (server/auth.go and the
// permission checks in server/client.go).
//
// # Contract
//
// New validates a Config and returns an immutable Authenticator; every
// error wraps ErrInvalidConfig and names the entry at fault. The server
// calls NeedsNonce to decide whether INFO carries a nonce (use NewNonce),
// Required for INFO auth_required, and Authenticate with the CONNECT
// credentials and the nonce it sent. Authenticate returns an Identity (user,
// account, permissions) or an error wrapping ErrAuthorization, which the
// server turns into -ERR 'Authorization Violation' before closing.
//
// Authentication, in order:
//   - No token and no users configured: everyone is an anonymous user of
//     GlobalAccount with nil Perms; presented credentials are ignored.
//   - No user, password, token or nkey presented: the NoAuthUser if set,
//     else refused. (Sig and JWT alone do not count as credentials.)
//   - An nkey, when NKey users exist: the key must be configured and Sig
//     must be its Ed25519 signature of the nonce's bytes, in raw-URL or
//     standard base64.
//   - Users exist: the user name must be configured and the password must
//     match (bcrypt if the configured one IsBcrypt, else constant time).
//   - A token is configured: it must match, the same way.
//
// # Permissions
//
// Perms are compiled once per user and shared by its connections; a nil
// *Perms allows everything. The server must:
//   - call CanPublish for every PUB/HPUB (cached, allocation-free on a hit)
//     and send -ERR 'Permissions Violation for Publish to "<subject>"' when
//     it refuses, unless the response permission below allows it;
//   - call CanSubscribe for every SUB and send -ERR 'Permissions Violation
//     for Subscription to "<subject>"' (with ` using queue "<q>"` for a
//     queue subscription) when it refuses;
//   - for each accepted subscription for which NeedsDeliveryCheck is true,
//     call CanDeliver on every message before delivering it and drop the
//     message silently when it refuses. Deny entries that a wildcard
//     subscription only partly overlaps are enforced there, as nats-server
//     does (client.go checkDenySub);
//   - when Response is non-nil, remember the reply subject of each message
//     delivered to the connection, and let the connection publish to a
//     remembered subject that CanPublish refuses, up to MaxMsgs times and
//     until Expires after delivery (client.go deliverMsg, responseAllowed).
//     A response permission without a publish allow list denies all other
//     publishing (auth.go validateResponsePermissions).
//
// Deviations from nats-server, all stricter: a wildcard subscription must
// be a subset of an allow pattern, so allow "foo.*" does not admit
// subscription "foo.>" (nats-server's sublist match treats the ">" as an
// ordinary token and admits it); an nkey presented by the client always
// needs a valid signature, even when it is the NoAuthUser; a publish
// permission entry with a queue group is a configuration error; a negative
// ResponsePermission field is a configuration error (nats-server reads it
// as unlimited); and an empty Publish.Allow list allows everything not
// denied unless a response permission is set (nats-server distinguishes a
// nil list from an empty one).
//
// # Secrets
//
// Passwords, tokens and signatures never appear in errors or in the
// printed or logged form of Credentials. Nkey configuration errors never
// quote the key, in case it is a seed.
//
// # Concurrency
//
// Authenticator and Perms are safe for concurrent use. Perms hold two
// bounded result caches (publish and delivery, 1024 entries each) behind
// sync.Map; there are no locks to order.
package auth
