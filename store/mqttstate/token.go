package mqttstate

import (
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
)

// Subject tokens for client ids and topics.
//
// A client id or a topic may hold any UTF-8, '.', '*', '>' and spaces
// included, none of which a subject token may. Up to maxPlain bytes it is
// encoded reversibly: "b" followed by its unpadded base64url form, which
// uses only [A-Za-z0-9_-]. A longer one (up to 65535 bytes, which would
// make a subject too long for the file engine) becomes "h" followed by the
// base64url SHA-256 of it (43 characters) and, when another name already
// holds that token, a decimal counter. Every record also carries the full
// name, which is what Open reads back; the token only keys the subject.
const maxPlain = 192

// baseToken returns the token a name gets when no other name holds it.
func baseToken(name string) string {
	if len(name) <= maxPlain {
		return "b" + base64.RawURLEncoding.EncodeToString([]byte(name))
	}
	sum := sha256.Sum256([]byte(name))
	return "h" + base64.RawURLEncoding.EncodeToString(sum[:])
}

// allocToken returns the token for name given the tokens in use (token →
// name): its base token, or for a hashed one whose base token another name
// holds, the base token with the first free counter.
func allocToken(name string, used map[string]string) string {
	base := baseToken(name)
	if owner, ok := used[base]; !ok || owner == name || base[0] == 'b' {
		return base
	}
	for n := 1; ; n++ {
		t := base + strconv.Itoa(n)
		if owner, ok := used[t]; !ok || owner == name {
			return t
		}
	}
}

// validToken reports whether t is a token allocToken could return.
func validToken(t string) bool {
	if len(t) < 1 {
		return false
	}
	switch t[0] {
	case 'b':
	case 'h':
		if len(t) < 44 {
			return false
		}
	default:
		return false
	}
	for i := 1; i < len(t); i++ {
		c := t[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Subjects of the records. Each stream holds one kind.
const (
	sessPrefix = "$MQTT.sess."   // sess:   $MQTT.sess.<client>
	msgsPrefix = "$MQTT.msgs."   // msgs:   $MQTT.msgs.<client>
	outPrefix  = "$MQTT.out."    // out:    $MQTT.out.<client>.<msgs seq>
	qinPrefix  = "$MQTT.qos2in." // qos2in: $MQTT.qos2in.<client>.<packet id>
	retPrefix  = "$MQTT.rmsgs."  // rmsgs:  $MQTT.rmsgs.<topic>
)

// splitTail parses "<prefix><token>" or "<prefix><token>.<n>": it returns
// the token, n (0 when absent) and whether the subject had that shape.
func splitTail(subj, prefix string, withNum bool) (string, uint64, bool) {
	rest, ok := strings.CutPrefix(subj, prefix)
	if !ok {
		return "", 0, false
	}
	if !withNum {
		return rest, 0, validToken(rest)
	}
	i := strings.LastIndexByte(rest, '.')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(rest[i+1:], 10, 64)
	if err != nil || !validToken(rest[:i]) {
		return "", 0, false
	}
	return rest[:i], n, true
}

// accountToken names an account in stream names: as is when it is short
// and made of [A-Za-z0-9_$-], else "~" and a hex hash ("~" is outside that
// set, so the two forms never meet).
func accountToken(acc string) string {
	if acc == "" {
		acc = "$G"
	}
	plain := len(acc) <= 64
	for i := 0; i < len(acc) && plain; i++ {
		c := acc[i]
		plain = c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '$'
	}
	if plain {
		return acc
	}
	sum := sha256.Sum256([]byte(acc))
	const hex = "0123456789abcdef"
	b := []byte{'~'}
	for _, c := range sum[:16] {
		b = append(b, hex[c>>4], hex[c&15])
	}
	return string(b)
}
