package app

import (
	"fmt"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/modbus"
	"github.com/leafbox/leafbox/cmd/internal/config"
)

// modbusBridgeSpecs maps the bridges.modbus entries to the bridges the registry
// runs.
func modbusBridgeSpecs(cfg *config.Config) ([]bridge.Spec, error) {
	if cfg.Bridges == nil {
		return nil, nil
	}
	var specs []bridge.Spec
	for _, m := range cfg.Bridges.Modbus {
		mc := modbusConfig(m)
		if err := mc.Validate(); err != nil {
			return nil, fmt.Errorf("bridges.modbus %s: %w", m.Name, err)
		}
		specs = append(specs, bridge.Spec{
			Kind: "modbus", Name: m.Name, Account: m.Account, Config: mc,
			New: func() (bridge.Bridge, error) { return modbus.New(mc) },
		})
	}
	return specs, nil
}

// modbusConfig is a bridges.modbus entry (with its defaults) as the
// bridge's Config.
func modbusConfig(m config.ModbusBridgeConfig) modbus.Config {
	mc := modbus.Config{
		TCP:     m.TCP,
		Timeout: time.Duration(m.Timeout),
		Plain:   m.Format == "plain",
		Store:   m.Delivery == "store",
	}
	if r := m.RTU; r != nil {
		mc.RTU = modbus.Line{Path: r.Port, Baud: r.Baud, DataBits: r.DataBits, Parity: r.Parity, StopBits: r.StopBits}
	}
	for _, d := range m.Devices {
		dev := modbus.Device{
			Name: d.Name, Unit: uint8(d.Unit), PollInterval: time.Duration(d.PollInterval),
			CommandSubject: d.CommandSubject, CommandStream: d.CommandStream, CommandDurable: d.CommandDurable,
		}
		for _, r := range d.Registers {
			dev.Registers = append(dev.Registers, modbus.Register{
				Name: r.Name, Subject: r.Subject, Table: r.Table, Address: uint16(r.Address), Type: r.Type,
				LowWordFirst: r.WordOrder == "little", Scale: r.Scale, Offset: r.Offset, Deadband: r.Deadband,
				Writable: r.Writable,
			})
		}
		mc.Devices = append(mc.Devices, dev)
	}
	return mc
}
