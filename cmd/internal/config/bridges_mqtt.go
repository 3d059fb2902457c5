package config

// MQTTBridgeConfig is one entry of bridges.mqtt.
type MQTTBridgeConfig struct {
	BridgeCommon `yaml:",inline"`
}

// bridgesMQTT checks the bridges.mqtt entries beyond their names.
func (v *validator) bridgesMQTT() {}
