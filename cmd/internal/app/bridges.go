package app

import (
	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/cmd/internal/config"
)

// bridgeSpecs returns every configured bridge, kind by kind
// (bridge_<kind>.go).
func bridgeSpecs(cfg *config.Config) ([]bridge.Spec, error) {
	var specs []bridge.Spec
	for _, kind := range []func(*config.Config) ([]bridge.Spec, error){mqttBridgeSpecs, serialBridgeSpecs, modbusBridgeSpecs} {
		s, err := kind(cfg)
		if err != nil {
			return nil, err
		}
		specs = append(specs, s...)
	}
	return specs, nil
}
