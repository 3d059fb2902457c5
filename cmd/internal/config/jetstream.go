package config

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/leafbox/leafbox/store/jsapi"
	"go.yaml.in/yaml/v3"
)

// JetStreamConfig is the jetstream block. In YAML it is true or false,
// "enabled" or "disabled", or a mapping; a mapping without enabled means
// enabled, as in nats-server. Without the block JetStream is on.
type JetStreamConfig struct {
	// Enabled turns JetStream on; false (jetstream: false, disabled or
	// {enabled: false}) turns it off.
	Enabled bool `yaml:"enabled"`
	// StoreDir holds the file store; it defaults to $STATE_DIRECTORY (set
	// by systemd) or else ~/.local/state/leafbox.
	StoreDir string `yaml:"store_dir,omitempty"`
	// MaxMemoryStore and MaxFileStore bound the storage used. Unset, they
	// default from the machine as in nats-server: 75% of the memory (or
	// GOMEMLIMIT), and 75% of the store's file system space at start less
	// the uplinks' min_free_disk reserve (StorageSummary says how).
	MaxMemoryStore Size `yaml:"max_memory_store,omitempty"`
	MaxFileStore   Size `yaml:"max_file_store,omitempty"`
	// Domain is the JetStream domain.
	Domain string `yaml:"domain,omitempty"`
	// SyncInterval is how often the file store is synced to disk: a
	// duration bounds the loss window on power failure, "always" syncs
	// before every acknowledgement (with group commit).
	SyncInterval SyncInterval `yaml:"sync_interval,omitempty"`
	// Cipher turns on encryption at rest of the file store (streams,
	// consumer state, uplink outboxes and dead letters), as nats-server's
	// jetstream.cipher: chachapoly or aes. The key comes from Key, else
	// KeyFile, else $LEAFBOX_JS_KEY.
	Cipher string `yaml:"cipher,omitempty"`
	// Key is the server key, at least 16 bytes; printed redacted.
	Key RedactedString `yaml:"key,omitempty"`
	// KeyFile names a file holding the key (surrounding white space is
	// ignored); it must not be readable by others.
	KeyFile string `yaml:"key_file,omitempty"`
	// PrevKey is the key being replaced: stores it opens are sealed again
	// with Key (only their small key files are rewritten).
	PrevKey RedactedString `yaml:"prev_key,omitempty"`

	// envKey is $LEAFBOX_JS_KEY, from SetDefaults' Env.
	envKey string
}

// KeyEnv is the environment variable that holds the JetStream
// encryption key when neither jetstream.key nor jetstream.key_file is set.
const KeyEnv = "LEAFBOX_JS_KEY"

type jetStreamFields struct {
	Enabled        *bool          `yaml:"enabled"`
	StoreDir       string         `yaml:"store_dir"`
	MaxMemoryStore Size           `yaml:"max_memory_store"`
	MaxFileStore   Size           `yaml:"max_file_store"`
	Domain         string         `yaml:"domain"`
	SyncInterval   SyncInterval   `yaml:"sync_interval"`
	Cipher         string         `yaml:"cipher"`
	Key            RedactedString `yaml:"key"`
	KeyFile        string         `yaml:"key_file"`
	PrevKey        RedactedString `yaml:"prev_key"`
}

// UnmarshalYAML implements the callback form of yaml's unmarshaler.
func (j *JetStreamConfig) UnmarshalYAML(unmarshal func(any) error) error {
	var c nodeCapture
	if err := unmarshal(&c); err != nil {
		return err
	}
	if c.node.Kind == yaml.ScalarNode && c.node.ShortTag() == "!!str" {
		// nats-server's string forms.
		switch strings.ToLower(c.node.Value) {
		case "enabled", "enable":
			*j = JetStreamConfig{Enabled: true}
			return nil
		case "disabled", "disable":
			*j = JetStreamConfig{}
			return nil
		}
	}
	on, f, err := boolOrMapping[jetStreamFields](unmarshal, "invalid jetstream: want true, false, enabled, disabled or a mapping")
	switch {
	case err != nil:
		return err
	case f == nil:
		*j = JetStreamConfig{Enabled: on}
	default:
		*j = JetStreamConfig{
			Enabled:        f.Enabled == nil || *f.Enabled,
			StoreDir:       f.StoreDir,
			MaxMemoryStore: f.MaxMemoryStore,
			MaxFileStore:   f.MaxFileStore,
			Domain:         f.Domain,
			SyncInterval:   f.SyncInterval,
			Cipher:         f.Cipher,
			Key:            f.Key,
			KeyFile:        f.KeyFile,
			PrevKey:        f.PrevKey,
		}
	}
	return nil
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
	v.jetStreamCipher(js)
}

// MinKeyLen is the shortest JetStream encryption key accepted (the file
// store's own minimum).
const MinKeyLen = 16

// cipherName returns the canonical name of a jetstream.cipher value:
// "chachapoly", "aes", or "" for none.
func cipherName(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "", "none":
		return "", true
	case "chachapoly", "chacha", "chacha20poly1305":
		return "chachapoly", true
	case "aes", "aes-gcm", "aesgcm":
		return "aes", true
	}
	return "", false
}

// Encryption is the resolved encryption at rest of the file store.
type Encryption struct {
	// Cipher is "chachapoly", "aes", or "" (plaintext).
	Cipher string
	// Key and PrevKey are the server key and the one it replaces.
	Key, PrevKey []byte
}

// jetStreamCipher checks the encryption keys: a known cipher, exactly one
// key source, a key long enough. Errors never show a key.
func (v *validator) jetStreamCipher(js *JetStreamConfig) {
	c, ok := cipherName(js.Cipher)
	if !ok {
		v.errf("jetstream.cipher", "%q is not a cipher: want chachapoly or aes", js.Cipher)
		return
	}
	if c == "" {
		switch {
		case js.Key != "":
			v.errf("jetstream.key", "set but jetstream.cipher is not: set cipher: chachapoly (or aes) to encrypt")
		case js.KeyFile != "":
			v.errf("jetstream.key_file", "set but jetstream.cipher is not: set cipher: chachapoly (or aes) to encrypt")
		case js.PrevKey != "":
			v.errf("jetstream.prev_key", "set but jetstream.cipher is not")
		}
		return
	}
	if js.Key != "" && js.KeyFile != "" {
		v.errf("jetstream.key_file", "jetstream.key is set too: give the key one way")
		return
	}
	if _, err := js.Encryption(); err != nil {
		path := "jetstream.key"
		switch {
		case js.KeyFile != "":
			path = "jetstream.key_file"
		case js.Key == "" && js.envKey == "":
			path = "jetstream.cipher"
		}
		v.errf(path, "%v", err)
	}
}

// Encryption returns the file store's encryption settings: the cipher and
// the key from key, key_file or $LEAFBOX_JS_KEY, in that order. It reads
// key_file. Errors name the source, never the key.
func (js *JetStreamConfig) Encryption() (Encryption, error) {
	if js == nil {
		return Encryption{}, nil
	}
	c, ok := cipherName(js.Cipher)
	if !ok {
		return Encryption{}, fmt.Errorf("%q is not a cipher: want chachapoly or aes", js.Cipher)
	}
	if c == "" {
		return Encryption{}, nil
	}
	enc := Encryption{Cipher: c}
	key, err := resolveKey(string(js.Key), js.KeyFile, js.envKey)
	if err != nil {
		return enc, err
	}
	if key == nil {
		return enc, fmt.Errorf("cipher %s needs a key: set jetstream.key, jetstream.key_file or $%s", c, KeyEnv)
	}
	enc.Key = key
	if js.PrevKey != "" {
		enc.PrevKey = []byte(js.PrevKey)
		if len(enc.PrevKey) < MinKeyLen {
			return enc, fmt.Errorf("jetstream.prev_key is %d bytes, want at least %d", len(enc.PrevKey), MinKeyLen)
		}
	}
	return enc, nil
}

// KeyFrom resolves a server key given outside a configuration file, as
// `leafbox store verify` takes one: from the file keyFile when it is set
// (read as jetstream.key_file is), else from env's $LEAFBOX_JS_KEY. It
// returns nil and no error when neither gives a key, and refuses one
// shorter than MinKeyLen. Errors name the source, never the key.
func KeyFrom(keyFile string, env Env) ([]byte, error) {
	return resolveKey("", keyFile, env.JSKey)
}

// resolveKey returns the first key given: key itself, the content of
// keyFile (surrounding white space ignored), envKey; nil when none is.
func resolveKey(key, keyFile, envKey string) ([]byte, error) {
	var b []byte
	source := "jetstream.key"
	switch {
	case key != "":
		b = []byte(key)
	case keyFile != "":
		raw, err := os.ReadFile(keyFile)
		if err != nil {
			return nil, fmt.Errorf("cannot read the key: %w", err)
		}
		b, source = bytes.TrimSpace(raw), keyFile
	case envKey != "":
		b, source = []byte(envKey), "$"+KeyEnv
	default:
		return nil, nil
	}
	if len(b) < MinKeyLen {
		return nil, fmt.Errorf("the key in %s is %d bytes, want at least %d (e.g. openssl rand -hex 32)", source, len(b), MinKeyLen)
	}
	return b, nil
}
