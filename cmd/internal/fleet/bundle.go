// Package fleet is the format of leafbox's fleet configuration bundles: a
// gateway configuration (YAML), a serial and a target (one gateway by its
// identity's public key, or a group), signed with an operator NKey
// (Ed25519). The hub side makes one with Sign (`leafbox fleet bundle`);
// the gateway checks it with Open against the keys it trusts, before
// anything in it is used. What a gateway does with an opened bundle
// (stage, validate, apply under a health check, roll back) is
// cmd/internal/app's.
//
// A bundle is one JSON object:
//
//	{"bundle":"leafbox-fleet/1","payload":"<base64 of the body>","key":"O...","sig":"<base64 Ed25519 signature of the payload's bytes>"}
//
// and the body, the bytes signed, is a JSON object too:
//
//	{"serial":7,"gateway":"N...","group":"","config":"<the YAML>","created":"2026-12-02T04:00:00Z"}
//
// Signing the body's exact bytes (not a re-encoding) keeps the check
// independent of how JSON is written.
package fleet

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nkeys"
)

// Format names the bundle format in the envelope's "bundle" field.
const Format = "leafbox-fleet/1"

// MaxBundle bounds a bundle's size; a gateway refuses larger ones unread.
const MaxBundle = 1 << 20

// Subjects a gateway listens on, below SubjectPrefix: <public key>.config
// for bundles addressed to it, group.<group>.config for its groups.
const SubjectPrefix = "$LEAFBOX.fleet."

// GatewaySubject is the subject bundles for the gateway with identity
// publicKey are sent to.
func GatewaySubject(publicKey string) string { return SubjectPrefix + publicKey + ".config" }

// GroupSubject is the subject bundles for the fleet group group are sent
// to.
func GroupSubject(group string) string { return SubjectPrefix + "group." + group + ".config" }

// Errors Open wraps, for errors.Is.
var (
	// ErrMalformed: the bytes are not a bundle.
	ErrMalformed = errors.New("fleet: malformed bundle")
	// ErrUnsigned: the bundle carries no signature or no key.
	ErrUnsigned = errors.New("fleet: unsigned bundle")
	// ErrUntrusted: the signing key is not one the gateway trusts.
	ErrUntrusted = errors.New("fleet: bundle signed by an untrusted key")
	// ErrBadSignature: the signature does not match the payload and key.
	ErrBadSignature = errors.New("fleet: bad signature")
)

// Body is what a bundle carries, the part the signature covers.
type Body struct {
	// Serial orders a target's bundles: a gateway applies only a serial
	// higher than any it has taken before.
	Serial uint64 `json:"serial"`
	// Gateway is the target gateway's identity public key (N...), or "".
	Gateway string `json:"gateway,omitempty"`
	// Group is the target fleet group, or "". Exactly one of Gateway and
	// Group is set.
	Group string `json:"group,omitempty"`
	// Config is the complete gateway configuration, YAML.
	Config string `json:"config"`
	// Created is when the bundle was made, for people reading it.
	Created time.Time `json:"created,omitzero"`
}

// Target describes the body's target for messages: "gateway N..." or
// "group NAME".
func (b *Body) Target() string {
	if b.Gateway != "" {
		return "gateway " + b.Gateway
	}
	return "group " + b.Group
}

// Hash is "sha256:" and the hex SHA-256 of the configuration's YAML, as
// a gateway reports it in /varz config_digest once applied.
func (b *Body) Hash() string {
	sum := sha256.Sum256([]byte(b.Config))
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (b *Body) check() error {
	switch {
	case b.Serial == 0:
		return fmt.Errorf("%w: serial missing or 0 (serials start at 1)", ErrMalformed)
	case b.Gateway == "" && b.Group == "":
		return fmt.Errorf("%w: no target: set the gateway's public key or a group", ErrMalformed)
	case b.Gateway != "" && b.Group != "":
		return fmt.Errorf("%w: both a gateway and a group: set one target", ErrMalformed)
	case b.Gateway != "" && !nkeys.IsValidPublicServerKey(b.Gateway):
		return fmt.Errorf("%w: gateway %q is not a gateway identity (a server public key, N...)", ErrMalformed, b.Gateway)
	case b.Group != "" && !validGroup(b.Group):
		return fmt.Errorf("%w: group %q is not a group name (one subject token)", ErrMalformed, b.Group)
	case strings.TrimSpace(b.Config) == "":
		return fmt.Errorf("%w: the configuration is empty", ErrMalformed)
	}
	return nil
}

// validGroup reports whether g is one subject token.
func validGroup(g string) bool {
	if g == "" || len(g) > 256 {
		return false
	}
	for i := 0; i < len(g); i++ {
		switch c := g[i]; {
		case c <= ' ', c == '.', c == '*', c == '>', c == 0x7f:
			return false
		}
	}
	return true
}

// envelope is the signed bundle on the wire.
type envelope struct {
	Bundle  string `json:"bundle"`
	Payload string `json:"payload"`
	Key     string `json:"key,omitempty"`
	Sig     string `json:"sig,omitempty"`
}

// Sign makes a bundle of body signed with the operator seed seed.
func Sign(seed []byte, body Body) ([]byte, error) {
	if err := body.check(); err != nil {
		return nil, err
	}
	kp, err := operatorKey(seed)
	if err != nil {
		return nil, err
	}
	defer kp.Wipe()
	payload, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	sig, err := kp.Sign(payload)
	if err != nil {
		return nil, fmt.Errorf("fleet: sign: %w", err)
	}
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return json.Marshal(envelope{
		Bundle:  Format,
		Payload: base64.StdEncoding.EncodeToString(payload),
		Key:     pub,
		Sig:     base64.StdEncoding.EncodeToString(sig),
	})
}

// operatorKey returns the key pair of an operator seed, refusing others.
func operatorKey(seed []byte) (nkeys.KeyPair, error) {
	seed = bytes.TrimSpace(seed)
	prefix, _, err := nkeys.DecodeSeed(seed)
	if err != nil {
		return nil, errors.New("fleet: not an NKey seed")
	}
	if prefix != nkeys.PrefixByteOperator {
		return nil, fmt.Errorf("fleet: the seed is of %s key, want an operator key (nk -gen operator)", prefix)
	}
	return nkeys.FromSeed(seed)
}

// Opened is a bundle whose signature checked out.
type Opened struct {
	Body
	// Signer is the operator public key that signed it.
	Signer string
	// Raw is the bundle as received, to keep on disk.
	Raw []byte
}

// Open checks data's signature against trusted (operator public keys) and
// returns its body. Every error wraps one of ErrMalformed, ErrUnsigned,
// ErrUntrusted or ErrBadSignature and says precisely what is wrong.
func Open(data []byte, trusted []string) (*Opened, error) {
	if len(data) > MaxBundle {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d a bundle may have", ErrMalformed, len(data), MaxBundle)
	}
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("%w: not a bundle's JSON: %v", ErrMalformed, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the bundle", ErrMalformed)
	}
	if env.Bundle != Format {
		return nil, fmt.Errorf("%w: format %q, want %q", ErrMalformed, env.Bundle, Format)
	}
	payload, err := base64.StdEncoding.DecodeString(env.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: payload is not base64: %v", ErrMalformed, err)
	}
	if env.Sig == "" || env.Key == "" {
		return nil, fmt.Errorf("%w: a bundle must carry a key and a signature (make it with leafbox fleet bundle --seed)", ErrUnsigned)
	}
	if !nkeys.IsValidPublicOperatorKey(env.Key) {
		return nil, fmt.Errorf("%w: key %q is not an operator public key", ErrUntrusted, env.Key)
	}
	if !slices.Contains(trusted, env.Key) {
		return nil, fmt.Errorf("%w: %s is not in fleet.trusted_keys", ErrUntrusted, env.Key)
	}
	sig, err := base64.StdEncoding.DecodeString(env.Sig)
	if err != nil {
		return nil, fmt.Errorf("%w: signature is not base64: %v", ErrBadSignature, err)
	}
	kp, err := nkeys.FromPublicKey(env.Key)
	if err != nil {
		return nil, fmt.Errorf("%w: key %s: %v", ErrUntrusted, env.Key, err)
	}
	if err := kp.Verify(payload, sig); err != nil {
		return nil, fmt.Errorf("%w: the signature does not match the payload for key %s (altered or signed by another key)", ErrBadSignature, env.Key)
	}
	var body Body
	bdec := json.NewDecoder(bytes.NewReader(payload))
	bdec.DisallowUnknownFields()
	if err := bdec.Decode(&body); err != nil {
		return nil, fmt.Errorf("%w: the signed body is not JSON: %v", ErrMalformed, err)
	}
	if err := body.check(); err != nil {
		return nil, err
	}
	return &Opened{Body: body, Signer: env.Key, Raw: append([]byte(nil), data...)}, nil
}

// Result is a gateway's answer to a bundle, sent to the bundle's reply
// subject as JSON.
type Result struct {
	// Gateway is the answering gateway's public key.
	Gateway string `json:"gateway"`
	// Serial is the bundle's serial (0 when it could not be read).
	Serial uint64 `json:"serial,omitempty"`
	// Status is StatusApplied, StatusRejected or StatusRolledBack.
	Status string `json:"status"`
	// Error says why it was rejected or rolled back.
	Error string `json:"error,omitempty"`
	// Hash is the configuration in force afterwards (/varz config_digest).
	Hash string `json:"hash,omitempty"`
	// Applied is the serial in force afterwards (0: the file's).
	Applied uint64 `json:"applied_serial"`
}

// The statuses of a Result.
const (
	// StatusApplied: the bundle's configuration is in force and healthy.
	StatusApplied = "applied"
	// StatusRejected: nothing changed (a bad signature, an old serial, a
	// configuration that does not validate or cannot be reloaded).
	StatusRejected = "rejected"
	// StatusRolledBack: the configuration was applied, failed its
	// health check, and the previous one is back in force.
	StatusRolledBack = "rolled_back"
)
