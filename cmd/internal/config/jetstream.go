package config

import (
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
}

type jetStreamFields struct {
	Enabled        *bool        `yaml:"enabled"`
	StoreDir       string       `yaml:"store_dir"`
	MaxMemoryStore Size         `yaml:"max_memory_store"`
	MaxFileStore   Size         `yaml:"max_file_store"`
	Domain         string       `yaml:"domain"`
	SyncInterval   SyncInterval `yaml:"sync_interval"`
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
}
