package app

import (
	"fmt"
	"time"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/serial"
	"github.com/leafbox/leafbox/cmd/internal/config"
)

// serialBridgeSpecs maps the bridges.serial entries to the bridges the registry
// runs.
func serialBridgeSpecs(cfg *config.Config) ([]bridge.Spec, error) {
	if cfg.Bridges == nil {
		return nil, nil
	}
	var specs []bridge.Spec
	for _, s := range cfg.Bridges.Serial {
		sc := serialConfig(s)
		if err := sc.Validate(); err != nil {
			return nil, fmt.Errorf("bridges.serial %s: %w", s.Name, err)
		}
		specs = append(specs, bridge.Spec{
			Kind: "serial", Name: s.Name, Account: s.Account, Config: sc,
			New: func() (bridge.Bridge, error) { return serial.New(sc) },
		})
	}
	return specs, nil
}

// serialConfig is a bridges.serial entry (with its defaults) as the
// bridge's Config.
func serialConfig(s config.SerialBridgeConfig) serial.Config {
	f := serial.Framing{
		Kind: s.Framing, MaxLen: s.MaxFrame, CRLF: s.LineEnding == "crlf", AllowNoChecksum: s.AllowNoChecksum,
		PrefixSize: s.LengthPrefix, LittleEndian: s.LengthEndian == "little",
	}
	if s.Delimiter != nil {
		f.Delimiter = byte(*s.Delimiter)
	}
	if s.Escape != nil {
		f.Escape = byte(*s.Escape)
	}
	return serial.Config{
		Port: serial.Port{
			Path: s.Port, Baud: s.Baud, DataBits: s.DataBits, Parity: s.Parity, StopBits: s.StopBits,
			ReadTimeout: time.Duration(s.ReadTimeout),
		},
		Framing:        f,
		Subject:        s.Subject,
		FixSubject:     s.FixSubject,
		Store:          s.Delivery == "store",
		CommandSubject: s.CommandSubject,
		CommandQueue:   s.CommandQueue,
		CommandStream:  s.CommandStream,
		CommandDurable: s.CommandDurable,
	}
}
