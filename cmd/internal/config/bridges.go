package config

import (
	"fmt"

	"github.com/leafbox/leafbox/store/jsapi"
)

// BridgesConfig is the bridges block: one list per kind of bridge. Each
// kind's entry type, defaults and checks are in bridges_<kind>.go.
type BridgesConfig struct {
	// MQTT bridges connect to site MQTT brokers.
	MQTT []MQTTBridgeConfig `yaml:"mqtt,omitempty"`
	// Serial bridges read and write serial ports.
	Serial []SerialBridgeConfig `yaml:"serial,omitempty"`
	// Modbus bridges poll Modbus RTU and TCP devices.
	Modbus []ModbusBridgeConfig `yaml:"modbus,omitempty"`
}

// BridgeCommon holds what every bridge entry has.
type BridgeCommon struct {
	// Name identifies the bridge within its kind (logs, /bridgez,
	// metrics, reloads).
	Name string `yaml:"name,omitempty"`
	// Account is the local account the bridge publishes and subscribes
	// in; empty is the global account.
	Account string `yaml:"account,omitempty"`
}

// bridges checks the bridges block: the names of each kind, then each
// kind's own entries.
func (v *validator) bridges() {
	b := v.c.Bridges
	if b == nil {
		return
	}
	checkNames := func(kind string, names []string) {
		seen := map[string]bool{}
		for i, name := range names {
			path := fmt.Sprintf("bridges.%s[%d].name", kind, i)
			switch {
			case name == "":
				v.errf(path, "is required")
			case jsapi.CheckName(name) != nil:
				v.errf(path, "%q is not a valid name: %v", name, jsapi.CheckName(name))
			case seen[name]:
				v.errf(path, "%q is used twice", name)
			}
			seen[name] = true
		}
	}
	var names []string
	for _, m := range b.MQTT {
		names = append(names, m.Name)
	}
	checkNames("mqtt", names)
	names = names[:0]
	for _, s := range b.Serial {
		names = append(names, s.Name)
	}
	checkNames("serial", names)
	names = names[:0]
	for _, m := range b.Modbus {
		names = append(names, m.Name)
	}
	checkNames("modbus", names)
	v.bridgesMQTT()
	v.bridgesSerial()
	v.bridgesModbus()
}
