package app

import (
	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/cmd/internal/config"
)

// serialBridgeSpecs maps the bridges.serial entries to the bridges the registry
// runs.
func serialBridgeSpecs(cfg *config.Config) ([]bridge.Spec, error) {
	_ = cfg
	return nil, nil
}
