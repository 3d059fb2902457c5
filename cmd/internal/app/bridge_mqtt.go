package app

import (
	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/cmd/internal/config"
)

// mqttBridgeSpecs maps the bridges.mqtt entries to the bridges the registry
// runs.
func mqttBridgeSpecs(cfg *config.Config) ([]bridge.Spec, error) {
	_ = cfg
	return nil, nil
}
