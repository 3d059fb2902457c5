package app

import (
	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/cmd/internal/config"
)

// modbusBridgeSpecs maps the bridges.modbus entries to the bridges the registry
// runs.
func modbusBridgeSpecs(cfg *config.Config) ([]bridge.Spec, error) {
	_ = cfg
	return nil, nil
}
