package app

import (
	"log/slog"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/store/storedir"
)

// openStore takes the store directory, migrating an older layout, unless
// nothing is kept on disk (nil, nil).
func openStore(c *config.Config, log *slog.Logger) (*storedir.Dir, error) {
	root := c.StoreRoot()
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
