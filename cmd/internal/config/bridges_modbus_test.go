package config

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

func TestModbusBridgeDefaults(t *testing.T) {
	c := mustValidate(t, `bridges:
  modbus:
    - name: line1
      rtu: {port: /dev/serial/by-id/usb-rs485}
      devices:
        - name: meter
          subject_prefix: site.meter.
          registers:
            - {name: power, table: input, address: 0, type: float32}
            - {name: relay, table: coil, address: 3, writable: true}
            - {name: setpoint, table: holding, address: 10, subject: site.meter.sp}
    - name: plc
      tcp: 127.0.0.1:502
      devices:
        - name: plc
          registers:
            - {name: mode, table: holding, address: 1, writable: true}
`)
	m := c.Bridges.Modbus[0]
	require.DeepEqual(t, m.Timeout, Duration(DefaultModbusTimeout))
	require.DeepEqual(t, m.Format, "json")
	require.DeepEqual(t, m.Delivery, "publish")
	require.DeepEqual(t, *m.RTU, ModbusRTUConfig{Port: "/dev/serial/by-id/usb-rs485", Baud: DefaultModbusBaud, DataBits: 8, Parity: "none", StopBits: 1})
	d := m.Devices[0]
	require.DeepEqual(t, d.Unit, 1)
	require.DeepEqual(t, d.PollInterval, Duration(DefaultModbusPollInterval))
	require.DeepEqual(t, d.Registers[0], ModbusRegisterConfig{Name: "power", Subject: "site.meter.power", Table: "input", Type: "float32", WordOrder: "big", Scale: 1})
	require.DeepEqual(t, d.Registers[1].Type, "bool")
	require.DeepEqual(t, d.Registers[2].Subject, "site.meter.sp")
	require.DeepEqual(t, c.Bridges.Modbus[1].Devices[0].Registers[0].Subject, "")
}

func TestModbusBridgeChecks(t *testing.T) {
	err := validateErr(t, `bridges:
  modbus:
    - name: a
      tcp: plc
      format: xml
      devices:
        - name: d
          unit: 300
          subject_prefix: "a.*."
          command_subject: "cmd.>"
          registers:
            - {name: r, table: holding, address: 65535, type: uint32}
            - {name: r, table: input, address: 0, type: double}
            - {name: c, table: coil, address: 0, type: uint16, subject: x}
            - {name: w, table: input, address: 0, writable: true}
            - {name: s, table: holding, address: 0, subject: s, word_order: little, deadband: -1}
        - name: d
          registers: [{name: q, table: holding, address: 0}]
    - name: b
      rtu: {port: /dev/ttyS0, parity: mark, stop_bits: 3, data_bits: 5}
      devices:
        - {name: x, unit: 248, registers: [{name: r, table: discrete, address: 0, subject: x, scale: 2}]}
    - name: c
      devices: []
`)
	require.ErrorContains(t, err,
		`line 4: bridges.modbus[0].tcp: "plc" is not host:port`,
		`line 5: bridges.modbus[0].format: "xml" is not json or plain`,
		"line 8: bridges.modbus[0].devices[0].unit: 300 is out of range (0-255)",
		`line 9: bridges.modbus[0].devices[0].subject_prefix: "a.*." is not literal`,
		`line 10: bridges.modbus[0].devices[0].command_subject: "cmd.>" is not a literal subject`,
		"line 12: bridges.modbus[0].devices[0].registers[0].address: 65535 is out of range (0-65534)",
		`line 13: bridges.modbus[0].devices[0].registers[1].name: "r" is used twice`,
		`line 13: bridges.modbus[0].devices[0].registers[1].type: "double" is not`,
		`line 14: bridges.modbus[0].devices[0].registers[2].type: a coil is a bool, not "uint16"`,
		"line 15: bridges.modbus[0].devices[0].registers[3].writable: a input cannot be written",
		"line 16: bridges.modbus[0].devices[0].registers[4].word_order: applies to 32-bit types only",
		"line 16: bridges.modbus[0].devices[0].registers[4].deadband: must not be negative",
		`line 12: bridges.modbus[0].devices[0].registers[0].subject: "a.*.r" is not a subject to publish on`,
		`line 17: bridges.modbus[0].devices[1].name: "d" is used twice`,
		"line 18: bridges.modbus[0].devices[1].registers[0].subject: is required for a register that is not writable",
		`line 20: bridges.modbus[1].rtu.parity: "mark" is not one of`,
		"line 20: bridges.modbus[1].rtu.stop_bits: 3 is not 1 or 2",
		"line 20: bridges.modbus[1].rtu.data_bits: 5 is out of range (7-8)",
		"line 22: bridges.modbus[1].devices[0].unit: 248 is out of range (0-247)",
		"bridges.modbus[1].devices[0].registers[0]: scale, offset and deadband apply to registers, not to a discrete",
		"line 23: bridges.modbus[2]: needs tcp (host:port) or rtu",
		"line 24: bridges.modbus[2].devices: needs at least one device",
	)
}

func TestModbusCommandStreamChecks(t *testing.T) {
	c := mustValidate(t, `jetstream: {enabled: true}
bridges:
  modbus:
    - name: plc
      tcp: 127.0.0.1:502
      devices:
        - name: plc
          command_subject: plc.write
          command_stream: PLC_CMD
          command_durable: plc
          registers: [{name: mode, table: holding, address: 1, writable: true}]
`)
	d := c.Bridges.Modbus[0].Devices[0]
	require.Equal(t, d.CommandStream, "PLC_CMD")
	require.Equal(t, d.CommandDurable, "plc")

	err := validateErr(t, `jetstream: {enabled: false}
bridges:
  modbus:
    - name: plc
      tcp: 127.0.0.1:502
      devices:
        - name: a
          command_stream: "bad name"
          registers: [{name: mode, table: holding, address: 1, writable: true}]
        - name: b
          command_durable: d
          registers: [{name: mode, table: holding, address: 1, writable: true}]
        - name: c
          command_stream: S
          command_durable: d
          registers: [{name: mode, table: holding, address: 1, writable: true}]
        - name: e
          command_stream: S
          command_durable: d
          registers: [{name: mode, table: holding, address: 1, writable: true}]
`)
	require.ErrorContains(t, err,
		"line 8: bridges.modbus[0].devices[0].command_stream: needs command_durable",
		`line 8: bridges.modbus[0].devices[0].command_stream: "bad name" is not a valid name`,
		"line 8: bridges.modbus[0].devices[0].command_stream: needs jetstream enabled",
		"line 11: bridges.modbus[0].devices[1].command_durable: needs command_stream",
		`line 19: bridges.modbus[0].devices[3].command_durable: "d" on "S" is used by another device`,
	)
}
