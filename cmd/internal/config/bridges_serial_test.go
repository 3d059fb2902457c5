package config

import (
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

func TestSerialBridgeDefaults(t *testing.T) {
	c := mustValidate(t, "bridges:\n  serial:\n    - name: gps\n      port: /dev/serial/by-id/usb-gps\n      framing: nmea\n      subject: gps.nmea\n      fix_subject: gps.fix\n    - name: bin\n      port: /dev/ttyUSB1\n      framing: delimited\n      subject: bin.in\n    - name: len\n      port: /dev/ttyUSB2\n      framing: length\n      subject: len.in\n")
	s := c.Bridges.Serial[0]
	require.DeepEqual(t, s.Baud, DefaultSerialBaud)
	require.DeepEqual(t, s.DataBits, 8)
	require.DeepEqual(t, s.Parity, "none")
	require.DeepEqual(t, s.StopBits, 1.0)
	require.DeepEqual(t, s.ReadTimeout, Duration(DefaultSerialReadTimeout))
	require.DeepEqual(t, s.MaxFrame, 82)
	require.DeepEqual(t, s.Delivery, "publish")
	require.DeepEqual(t, s.LineEnding, "")
	d := c.Bridges.Serial[1]
	require.DeepEqual(t, *d.Delimiter, 0x7e)
	require.DeepEqual(t, *d.Escape, 0x7d)
	require.DeepEqual(t, d.MaxFrame, 65536)
	l := c.Bridges.Serial[2]
	require.DeepEqual(t, l.MaxFrame, 65535)
	require.DeepEqual(t, l.LengthPrefix, 2)
	require.DeepEqual(t, l.LengthEndian, "big")
}

func TestSerialBridgeChecks(t *testing.T) {
	err := validateErr(t, `jetstream: {enabled: false}
bridges:
  serial:
    - name: a
      port: ttyUSB0
      baud: -1
      data_bits: 9
      parity: sometimes
      stop_bits: 3
      framing: morse
      subject: "a.*"
      command_queue: q
    - name: b
      port: /dev/ttyS0
      framing: lines
      line_ending: cr
      subject: b
      fix_subject: b.fix
      delivery: store
      length_prefix: 2
      delimiter: 300
    - name: c
      port: /dev/ttyS1
      framing: length
      length_prefix: 1
      max_frame: 1000
      length_endian: middle
      subject: c
    - name: d
      port: /dev/ttyS2
      framing: delimited
      delimiter: 1
      escape: 1
      subject: d
    - name: e
      port: /dev/ttyS3
      subject: e
      command_stream: "bad name"
      command_queue: q
      command_subject: e.cmd
`)
	require.ErrorContains(t, err,
		`line 5: bridges.serial[0].port: "ttyUSB0" is not an absolute path`,
		"line 6: bridges.serial[0].baud: -1 is out of range",
		"line 7: bridges.serial[0].data_bits: 9 is out of range (5-8)",
		`line 8: bridges.serial[0].parity: "sometimes" is not one of`,
		"line 9: bridges.serial[0].stop_bits: 3 is not 1, 1.5 or 2",
		`line 10: bridges.serial[0].framing: "morse" is not lines`,
		`line 11: bridges.serial[0].subject: "a.*" is not a subject to publish on`,
		"line 12: bridges.serial[0].command_queue: needs command_subject",
		`line 16: bridges.serial[1].line_ending: "cr" is not lf or crlf`,
		"line 18: bridges.serial[1].fix_subject: applies to nmea framing only",
		"line 19: bridges.serial[1].delivery: store needs jetstream enabled",
		"line 20: bridges.serial[1].length_prefix: applies to length framing only",
		"line 21: bridges.serial[1].delimiter: applies to delimited framing only",
		"line 26: bridges.serial[2].max_frame: 1000 does not fit a 1-byte length prefix",
		`line 27: bridges.serial[2].length_endian: "middle" is not big or little`,
		"bridges.serial[3].escape: must differ from the delimiter",
		"line 38: bridges.serial[4].command_stream: needs command_durable",
		`line 38: bridges.serial[4].command_stream: "bad name" is not a valid name`,
		"line 38: bridges.serial[4].command_stream: needs jetstream enabled",
		"line 39: bridges.serial[4].command_queue: does not apply to a command_stream",
	)
	err = validateErr(t, "bridges:\n  serial:\n    - name: x\n")
	require.ErrorContains(t, err, "line 3: bridges.serial[0].port: is required", `bridges.serial[0].subject: "" is not a subject`)
}
