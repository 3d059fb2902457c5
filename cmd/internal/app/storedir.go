package app

import (
	"log/slog"

	"github.com/leafbox/leafbox/store/storedir"
)

// storeRoot is the store directory: the uplinks' state directory, else the
// JetStream store directory, else "" (nothing is kept on disk).
func (c *Config) storeRoot() string {
	if c.stateDir != "" {
		return c.stateDir
	}
	if c.JetStream != nil && c.JetStream.Enabled {
		return c.JetStream.StoreDir
	}
	return ""
}

// layout is the store directory's layout (store/storedir): where streams,
// outboxes, dead letters and state files live. Its Root is "" when
// nothing is kept on disk.
func (c *Config) layout() storedir.Layout { return storedir.At(c.storeRoot()) }

// openStore takes the store directory, migrating an older layout, unless
// nothing is kept on disk (nil, nil).
func openStore(c *Config, log *slog.Logger) (*storedir.Dir, error) {
	root := c.storeRoot()
	if root == "" {
		return nil, nil
	}
	d, err := storedir.Open(root)
	if err != nil {
		return nil, err
	}
	for _, m := range d.Migrated {
		log.Info("store layout migrated", "store_dir", root, "change", m)
	}
	return d, nil
}
