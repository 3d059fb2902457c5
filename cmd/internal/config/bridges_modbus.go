package config

// ModbusBridgeConfig is one entry of bridges.modbus.
type ModbusBridgeConfig struct {
	BridgeCommon `yaml:",inline"`
}

// bridgesModbus checks the bridges.modbus entries beyond their names.
func (v *validator) bridgesModbus() {}
