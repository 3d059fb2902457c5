package config

import (
	"fmt"
	"strings"

	"github.com/leafbox/leafbox/core/auth"
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
	v.bridgeAccounts()
}

// bridgeAccounts checks that each bridge's account is listed under
// accounts, and that a bridge outside the global account stores into no
// stream: the JetStream engine serves the global account only.
func (v *validator) bridgeAccounts() {
	b := v.c.Bridges
	for i, m := range b.MQTT {
		var stores []string
		for j, r := range m.Inbound {
			if r.Store {
				stores = append(stores, fmt.Sprintf("inbound[%d].store", j))
			}
		}
		for j, r := range m.Outbound {
			if r.Stream != "" {
				stores = append(stores, fmt.Sprintf("outbound[%d].stream", j))
			}
		}
		v.bridgeAccount(fmt.Sprintf("bridges.mqtt[%d]", i), m.Account, stores)
	}
	for i, s := range b.Serial {
		var stores []string
		if s.Delivery == "store" {
			stores = append(stores, "delivery")
		}
		if s.CommandStream != "" {
			stores = append(stores, "command_stream")
		}
		v.bridgeAccount(fmt.Sprintf("bridges.serial[%d]", i), s.Account, stores)
	}
	for i, m := range b.Modbus {
		var stores []string
		if m.Delivery == "store" {
			stores = append(stores, "delivery")
		}
		v.bridgeAccount(fmt.Sprintf("bridges.modbus[%d]", i), m.Account, stores)
	}
}

// bridgeAccount checks the account of the bridge at path, whose keys
// stores (relative to path) store into or read from a stream.
func (v *validator) bridgeAccount(path, account string, stores []string) {
	if account == "" || account == auth.GlobalAccount {
		return
	}
	if _, ok := v.c.Accounts[account]; !ok {
		listed := "none"
		if names := sortedKeys(v.c.Accounts); len(names) > 0 {
			listed = strings.Join(names, ", ")
		}
		v.errf(path+".account", "no account named %q (accounts: %s)", account, listed)
		return
	}
	for _, key := range stores {
		v.errf(path+"."+key, "uses a stream, but the bridge is in account %q and JetStream serves the global account only", account)
	}
}
