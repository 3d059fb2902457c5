package config

// SerialBridgeConfig is one entry of bridges.serial.
type SerialBridgeConfig struct {
	BridgeCommon `yaml:",inline"`
}

// bridgesSerial checks the bridges.serial entries beyond their names.
func (v *validator) bridgesSerial() {}
