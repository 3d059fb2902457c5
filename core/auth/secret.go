package auth

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"

	"golang.org/x/crypto/bcrypt"
)

// nonceLen is the number of random bytes in a nonce, as in nats-server.
const nonceLen = 11

// NewNonce returns a fresh random nonce for the INFO nonce field: 11 random
// bytes in unpadded base64url, 15 characters. Clients sign its bytes.
func NewNonce() string {
	var b [nonceLen]byte
	_, _ = rand.Read(b[:]) // never fails; crypto/rand crashes the program instead
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// IsBcrypt reports whether s looks like a bcrypt hash: "$2a$", "$2b$",
// "$2x$" or "$2y$" followed by a two-digit cost and "$". Configured
// passwords and tokens of this form are compared with bcrypt.
func IsBcrypt(s string) bool {
	if len(s) < 7 || s[0] != '$' || s[1] != '2' || s[3] != '$' || s[6] != '$' {
		return false
	}
	switch s[2] {
	case 'a', 'b', 'x', 'y':
	default:
		return false
	}
	return isDigit(s[4]) && isDigit(s[5])
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// checkBcrypt reports whether a configured secret that IsBcrypt can be
// used as a hash at all; it returns bcrypt's complaint if not.
func checkBcrypt(hash string) error {
	_, err := bcrypt.Cost([]byte(hash))
	return err
}

// secretMatches compares a presented secret with the configured one: with
// bcrypt when the configured secret is a bcrypt hash, otherwise in constant
// time.
func secretMatches(configured, presented string) bool {
	if IsBcrypt(configured) {
		return bcrypt.CompareHashAndPassword([]byte(configured), []byte(presented)) == nil
	}
	return subtle.ConstantTimeCompare([]byte(configured), []byte(presented)) == 1
}
