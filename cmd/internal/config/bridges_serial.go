package config

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Defaults of a bridges.serial entry.
const (
	DefaultSerialBaud        = 9600
	DefaultSerialReadTimeout = 100 * time.Millisecond
	// DefaultSerialDelimiter and DefaultSerialEscape are HDLC's flag and
	// escape bytes, for framing: delimited.
	DefaultSerialDelimiter = 0x7e
	DefaultSerialEscape    = 0x7d
)

// SerialBridgeConfig is one entry of bridges.serial: a serial port whose
// frames are published on a subject, and whose command subject's
// messages are written to the port.
type SerialBridgeConfig struct {
	BridgeCommon `yaml:",inline"`
	// Port is the device path; a symlink such as /dev/serial/by-id/...
	// is resolved each time the port is opened.
	Port string `yaml:"port,omitempty"`
	// Baud is the line speed (default 9600).
	Baud int `yaml:"baud,omitempty"`
	// DataBits is 5 to 8 (default 8).
	DataBits int `yaml:"data_bits,omitempty"`
	// Parity is none (the default), even, odd, mark or space.
	Parity string `yaml:"parity,omitempty"`
	// StopBits is 1 (the default), 1.5 or 2.
	StopBits float64 `yaml:"stop_bits,omitempty"`
	// ReadTimeout bounds one read, and so how soon an unplugged device
	// whose path vanished is noticed (default 100ms).
	ReadTimeout Duration `yaml:"read_timeout,omitempty"`
	// Framing is lines (the default: newline-delimited text), json (JSON
	// lines, each checked), nmea (NMEA 0183, checksums verified), length
	// (binary with a length prefix) or delimited (binary ending at a
	// delimiter byte, with byte stuffing).
	Framing string `yaml:"framing,omitempty"`
	// MaxFrame is the longest frame accepted (default 4096 for lines
	// and json, 82 for nmea, 65536 for binary, or what a 1- or 2-byte
	// length prefix can say).
	MaxFrame int `yaml:"max_frame,omitempty"`
	// LineEnding is what ends a written line: lf (the default) or crlf.
	// NMEA always writes CR LF.
	LineEnding string `yaml:"line_ending,omitempty"`
	// AllowNoChecksum accepts NMEA sentences without "*hh".
	AllowNoChecksum bool `yaml:"allow_no_checksum,omitempty"`
	// LengthPrefix is the width of the length prefix: 1, 2 (the default)
	// or 4 bytes; LengthEndian is big (the default) or little.
	LengthPrefix int    `yaml:"length_prefix,omitempty"`
	LengthEndian string `yaml:"length_endian,omitempty"`
	// Delimiter and Escape are the delimited framing's bytes (default
	// 0x7e and 0x7d).
	Delimiter *int `yaml:"delimiter,omitempty"`
	Escape    *int `yaml:"escape,omitempty"`
	// Subject receives every good frame.
	Subject string `yaml:"subject,omitempty"`
	// FixSubject (nmea only) receives each GPS fix (GGA, RMC) as JSON.
	FixSubject string `yaml:"fix_subject,omitempty"`
	// Delivery is publish (the default: core messages) or store (into
	// the local JetStream stream that captures the subject, waiting for
	// its acknowledgement).
	Delivery string `yaml:"delivery,omitempty"`
	// CommandSubject carries messages written to the port; a request
	// is answered once the bytes are written. CommandQueue is its queue
	// group.
	CommandSubject string `yaml:"command_subject,omitempty"`
	CommandQueue   string `yaml:"command_queue,omitempty"`
	// CommandStream and CommandDurable take the commands from a durable
	// consumer on a local stream instead (command_subject, if set,
	// filters it): each is acknowledged once written to the port, so
	// commands stored while the device is away are written, in order,
	// when it is back.
	CommandStream  string `yaml:"command_stream,omitempty"`
	CommandDurable string `yaml:"command_durable,omitempty"`
}

// Frame length defaults, by framing.
var serialMaxFrame = map[string]int{"lines": 4096, "json": 4096, "nmea": 82, "length": 65536, "delimited": 65536}

// setSerialBridgeDefaults fills the bridges.serial entries' defaults.
func (c *Config) setSerialBridgeDefaults() {
	if c.Bridges == nil {
		return
	}
	for i := range c.Bridges.Serial {
		s := &c.Bridges.Serial[i]
		setDefault(&s.Baud, DefaultSerialBaud)
		setDefault(&s.DataBits, 8)
		setDefault(&s.Parity, "none")
		setDefault(&s.StopBits, 1)
		setDefault(&s.ReadTimeout, Duration(DefaultSerialReadTimeout))
		setDefault(&s.Framing, "lines")
		setDefault(&s.Delivery, "publish")
		switch s.Framing {
		case "lines", "json":
			setDefault(&s.LineEnding, "lf")
		case "length":
			setDefault(&s.LengthPrefix, 2)
			setDefault(&s.LengthEndian, "big")
			if s.LengthPrefix == 1 || s.LengthPrefix == 2 {
				setDefault(&s.MaxFrame, 1<<(8*s.LengthPrefix)-1)
			}
		case "delimited":
			if s.Delimiter == nil {
				d := DefaultSerialDelimiter
				s.Delimiter = &d
			}
			if s.Escape == nil {
				e := DefaultSerialEscape
				s.Escape = &e
			}
		}
		setDefault(&s.MaxFrame, serialMaxFrame[s.Framing])
	}
}

// bridgesSerial checks the bridges.serial entries beyond their names.
func (v *validator) bridgesSerial() {
	for i, s := range v.c.Bridges.Serial {
		path := fmt.Sprintf("bridges.serial[%d]", i)
		switch {
		case s.Port == "":
			v.errf(path+".port", "is required (a device such as /dev/ttyUSB0 or /dev/serial/by-id/...)")
		case !filepath.IsAbs(s.Port):
			v.errf(path+".port", "%q is not an absolute path", s.Port)
		}
		v.serialLine(path, s.Baud, s.DataBits, 5, s.Parity, []string{"none", "even", "odd", "mark", "space"})
		switch s.StopBits {
		case 1, 1.5, 2:
		default:
			v.errf(path+".stop_bits", "%v is not 1, 1.5 or 2", s.StopBits)
		}
		if s.ReadTimeout <= 0 {
			v.errf(path+".read_timeout", "must be positive")
		}
		if _, known := serialMaxFrame[s.Framing]; !known {
			v.errf(path+".framing", "%q is not lines, json, nmea, length or delimited", s.Framing)
		} else if s.MaxFrame <= 0 {
			v.errf(path+".max_frame", "must be positive")
		}
		text := s.Framing == "lines" || s.Framing == "json"
		switch {
		case s.LineEnding != "" && !text:
			v.errf(path+".line_ending", "applies to lines and json framing only")
		case text && s.LineEnding != "lf" && s.LineEnding != "crlf":
			v.errf(path+".line_ending", "%q is not lf or crlf", s.LineEnding)
		}
		if s.AllowNoChecksum && s.Framing != "nmea" {
			v.errf(path+".allow_no_checksum", "applies to nmea framing only")
		}
		v.serialBinary(path, s)
		if !subject.ValidLiteral(s.Subject) {
			v.errf(path+".subject", "%q is not a subject to publish on (required, no wildcards)", s.Subject)
		}
		switch {
		case s.FixSubject == "":
		case s.Framing != "nmea":
			v.errf(path+".fix_subject", "applies to nmea framing only")
		case !subject.ValidLiteral(s.FixSubject):
			v.errf(path+".fix_subject", "%q is not a subject to publish on", s.FixSubject)
		}
		v.bridgeDelivery(path, s.Delivery)
		if s.CommandSubject != "" && !subject.Valid(s.CommandSubject) {
			v.errf(path+".command_subject", "invalid subject %q", s.CommandSubject)
		}
		switch {
		case s.CommandQueue == "":
		case s.CommandSubject == "":
			v.errf(path+".command_queue", "needs command_subject")
		case !subject.ValidQueue(s.CommandQueue):
			v.errf(path+".command_queue", "invalid queue group %q", s.CommandQueue)
		case s.CommandStream != "":
			v.errf(path+".command_queue", "does not apply to a command_stream (its durable consumer is shared)")
		}
		v.serialCommandStream(path, s)
	}
}

// serialCommandStream checks command_stream and command_durable.
func (v *validator) serialCommandStream(path string, s SerialBridgeConfig) {
	if s.CommandStream == "" && s.CommandDurable == "" {
		return
	}
	switch {
	case s.CommandStream == "":
		v.errf(path+".command_durable", "needs command_stream")
	case s.CommandDurable == "":
		v.errf(path+".command_stream", "needs command_durable")
	}
	for _, n := range []struct{ key, val string }{{"command_stream", s.CommandStream}, {"command_durable", s.CommandDurable}} {
		if err := jsapi.CheckName(n.val); n.val != "" && err != nil {
			v.errf(path+"."+n.key, "%q is not a valid name: %v", n.val, err)
		}
	}
	if js := v.c.JetStream; js == nil || !js.Enabled {
		v.errf(path+".command_stream", "needs jetstream enabled")
	}
}

// serialBinary checks the binary framings' keys.
func (v *validator) serialBinary(path string, s SerialBridgeConfig) {
	if s.Framing == "length" {
		switch s.LengthPrefix {
		case 1, 2, 4:
			if limit := 1<<(8*s.LengthPrefix) - 1; s.LengthPrefix < 4 && s.MaxFrame > limit {
				v.errf(path+".max_frame", "%d does not fit a %d-byte length prefix (at most %d)", s.MaxFrame, s.LengthPrefix, limit)
			}
		default:
			v.errf(path+".length_prefix", "%d is not 1, 2 or 4", s.LengthPrefix)
		}
		if s.LengthEndian != "big" && s.LengthEndian != "little" {
			v.errf(path+".length_endian", "%q is not big or little", s.LengthEndian)
		}
	} else {
		if s.LengthPrefix != 0 {
			v.errf(path+".length_prefix", "applies to length framing only")
		}
		if s.LengthEndian != "" {
			v.errf(path+".length_endian", "applies to length framing only")
		}
	}
	if s.Framing != "delimited" {
		if s.Delimiter != nil {
			v.errf(path+".delimiter", "applies to delimited framing only")
		}
		if s.Escape != nil {
			v.errf(path+".escape", "applies to delimited framing only")
		}
		return
	}
	for _, b := range []struct {
		key string
		val *int
	}{{"delimiter", s.Delimiter}, {"escape", s.Escape}} {
		if b.val != nil && (*b.val < 0 || *b.val > 255) {
			v.errf(path+"."+b.key, "%d is not a byte (0 to 255)", *b.val)
		}
	}
	if s.Delimiter != nil && s.Escape != nil && *s.Delimiter == *s.Escape {
		v.errf(path+".escape", "must differ from the delimiter")
	}
}

// serialLine checks a serial line's speed, data bits and parity.
func (v *validator) serialLine(path string, baud, dataBits, minBits int, parity string, parities []string) {
	if baud <= 0 || baud > 4000000 {
		v.errf(path+".baud", "%d is out of range (1-4000000)", baud)
	}
	if dataBits < minBits || dataBits > 8 {
		v.errf(path+".data_bits", "%d is out of range (%d-8)", dataBits, minBits)
	}
	for _, p := range parities {
		if parity == p {
			return
		}
	}
	v.errf(path+".parity", "%q is not one of %v", parity, parities)
}

// bridgeDelivery checks a bridge's delivery key.
func (v *validator) bridgeDelivery(path, delivery string) {
	switch delivery {
	case "publish":
	case "store":
		if js := v.c.JetStream; js == nil || !js.Enabled {
			v.errf(path+".delivery", "store needs jetstream enabled")
		}
	default:
		v.errf(path+".delivery", "%q is not publish or store", delivery)
	}
}
