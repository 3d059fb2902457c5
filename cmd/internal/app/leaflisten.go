package app

import (
	"errors"
	"reflect"

	"github.com/leafbox/leafbox/cmd/internal/config"
)

// leafListenChange reports a reload that changes the leafnode listener,
// which needs a restart.
func leafListenChange(old, cfg *config.Config) error {
	part := func(c *config.Config) any {
		if c.LeafNodes == nil {
			return nil
		}
		ln := *c.LeafNodes
		ln.Remotes = nil
		return ln
	}
	if !reflect.DeepEqual(part(old), part(cfg)) {
		return errors.New("leafnodes: changing listen, authorization, tls or compression needs a restart")
	}
	return nil
}
