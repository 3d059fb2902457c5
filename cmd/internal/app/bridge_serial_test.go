package app

import (
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge/modbus"
	"github.com/leafbox/leafbox/bridge/serial"
	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/require"
)

// TestSerialAndModbusSpecs: the bridges.serial and bridges.modbus entries
// become specs whose Config carries every setting, defaults included, and
// whose New builds the bridge.
func TestSerialAndModbusSpecs(t *testing.T) {
	// The gps bridge reads commands from a stream, so it is in the global
	// account (JetStream serves no other); bin is in account SENSORS.
	cfg, err := config.Parse([]byte(`accounts:
  SENSORS: {users: [{user: s, password: p}]}
bridges:
  serial:
    - name: gps
      port: /dev/serial/by-id/usb-gps
      baud: 4800
      framing: nmea
      subject: gps.nmea
      fix_subject: gps.fix
      command_subject: gps.cmd
      command_stream: GPS_CMDS
      command_durable: gps
    - name: bin
      account: SENSORS
      port: /dev/ttyUSB1
      framing: delimited
      escape: 0x10
      subject: bin.in
  modbus:
    - name: line1
      rtu: {port: /dev/ttyUSB2, baud: 9600, parity: even}
      format: plain
      devices:
        - name: meter
          unit: 3
          poll_interval: 250ms
          subject_prefix: meter.
          command_subject: meter.write
          registers:
            - {name: power, table: input, address: 4, type: float32, word_order: little, scale: 0.001, deadband: 5}
            - {name: relay, table: coil, address: 1, writable: true}
`))
	require.NoError(t, err)
	cfg.SetDefaults(config.Env{Home: t.TempDir()})
	require.NoError(t, cfg.Validate())
	specs, err := bridgeSpecs(cfg)
	require.NoError(t, err)
	require.Equal(t, len(specs), 3)

	gps := specs[0]
	require.Equal(t, gps.Kind+"/"+gps.Name+"/"+gps.Account, "serial/gps/")
	require.Equal(t, specs[1].Kind+"/"+specs[1].Name+"/"+specs[1].Account, "serial/bin/SENSORS")
	sc := gps.Config.(serial.Config)
	require.Equal(t, sc.Port, serial.Port{Path: "/dev/serial/by-id/usb-gps", Baud: 4800, DataBits: 8, Parity: "none", StopBits: 1, ReadTimeout: 100 * time.Millisecond})
	require.Equal(t, sc.Framing, serial.Framing{Kind: "nmea", MaxLen: 82})
	require.Equal(t, sc.FixSubject, "gps.fix")
	require.Equal(t, sc.CommandSubject, "gps.cmd")
	require.Equal(t, sc.CommandStream+"/"+sc.CommandDurable, "GPS_CMDS/gps")
	require.Equal(t, specs[1].Config.(serial.Config).Framing, serial.Framing{Kind: "delimited", MaxLen: 65536, Delimiter: 0x7e, Escape: 0x10})

	mc := specs[2].Config.(modbus.Config)
	require.Equal(t, mc.RTU, modbus.Line{Path: "/dev/ttyUSB2", Baud: 9600, DataBits: 8, Parity: "even", StopBits: 1})
	require.Equal(t, mc.Plain, true)
	require.Equal(t, mc.Timeout, time.Second)
	dev := mc.Devices[0]
	require.Equal(t, dev.Unit, uint8(3))
	require.Equal(t, dev.PollInterval, 250*time.Millisecond)
	require.Equal(t, dev.Registers[0], modbus.Register{Name: "power", Subject: "meter.power", Table: "input", Address: 4,
		Type: "float32", LowWordFirst: true, Scale: 0.001, Deadband: 5})
	require.Equal(t, dev.Registers[1], modbus.Register{Name: "relay", Subject: "meter.relay", Table: "coil", Address: 1, Type: "bool", Scale: 1, Writable: true})
	for _, s := range specs {
		if _, err := s.New(); err != nil {
			t.Fatalf("%s %s: New: %v", s.Kind, s.Name, err)
		}
	}
}
