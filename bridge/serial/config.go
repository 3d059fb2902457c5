package serial

import (
	"errors"
	"fmt"
	"time"

	"github.com/leafbox/leafbox/bridge/serial/frame"
	goserial "go.bug.st/serial"
)

// Defaults of a Config's zero fields.
const (
	DefaultBaud        = 9600
	DefaultReadTimeout = 100 * time.Millisecond
	DefaultQueueLen    = 64
	DefaultLogInterval = 10 * time.Second
	DefaultStoreWait   = 5 * time.Second
)

// Port is how a port is opened: path and line settings.
type Port struct {
	// Path is the device ("/dev/ttyUSB0", "/dev/serial/by-id/..."); a
	// symlink is resolved at each open.
	Path string
	// Baud is the line speed (DefaultBaud when 0).
	Baud int
	// DataBits is 5 to 8 (8 when 0).
	DataBits int
	// Parity is "none" (when empty), "even", "odd", "mark" or "space".
	Parity string
	// StopBits is 1 (when 0), 1.5 or 2.
	StopBits float64
	// ReadTimeout bounds one read, and so how soon a vanished path or
	// a stop is noticed (DefaultReadTimeout when 0).
	ReadTimeout time.Duration
}

// mode returns the port's line settings for go.bug.st/serial.
func (p Port) mode() (*goserial.Mode, error) {
	m := &goserial.Mode{BaudRate: p.Baud, DataBits: p.DataBits}
	if m.BaudRate == 0 {
		m.BaudRate = DefaultBaud
	}
	if m.DataBits == 0 {
		m.DataBits = 8
	}
	if m.DataBits < 5 || m.DataBits > 8 {
		return nil, fmt.Errorf("serial: data bits %d is not 5 to 8", m.DataBits)
	}
	switch p.Parity {
	case "", "none":
		m.Parity = goserial.NoParity
	case "even":
		m.Parity = goserial.EvenParity
	case "odd":
		m.Parity = goserial.OddParity
	case "mark":
		m.Parity = goserial.MarkParity
	case "space":
		m.Parity = goserial.SpaceParity
	default:
		return nil, fmt.Errorf("serial: parity %q is not none, even, odd, mark or space", p.Parity)
	}
	switch p.StopBits {
	case 0, 1:
		m.StopBits = goserial.OneStopBit
	case 1.5:
		m.StopBits = goserial.OnePointFiveStopBits
	case 2:
		m.StopBits = goserial.TwoStopBits
	default:
		return nil, fmt.Errorf("serial: stop bits %v is not 1, 1.5 or 2", p.StopBits)
	}
	return m, nil
}

// Framing names a framer and its settings.
type Framing struct {
	// Kind is "lines" (when empty), "json", "nmea", "length" or
	// "delimited".
	Kind string
	// MaxLen is the longest frame (0: the framer's default).
	MaxLen int
	// CRLF ends outbound lines with CR LF (lines and json).
	CRLF bool
	// AllowNoChecksum accepts NMEA sentences without a checksum.
	AllowNoChecksum bool
	// PrefixSize (1, 2 or 4) and LittleEndian shape a length prefix.
	PrefixSize   int
	LittleEndian bool
	// Delimiter and Escape are the delimited framer's bytes.
	Delimiter, Escape byte
}

// NewFramer builds the framer.
func (f Framing) NewFramer() (frame.Framer, error) {
	switch f.Kind {
	case "", "lines":
		return frame.NewLines(f.MaxLen, f.CRLF), nil
	case "json":
		return frame.NewJSONLines(f.MaxLen, f.CRLF), nil
	case "nmea":
		return frame.NewNMEA(f.MaxLen, f.AllowNoChecksum), nil
	case "length":
		return frame.NewLengthPrefixed(f.PrefixSize, f.LittleEndian, f.MaxLen)
	case "delimited":
		return frame.NewDelimited(f.Delimiter, f.Escape, f.MaxLen)
	}
	return nil, fmt.Errorf("serial: framing %q is not lines, json, nmea, length or delimited", f.Kind)
}

// Config is one serial bridge. It is comparable (reloads compare it).
type Config struct {
	// Port is the device and its line settings.
	Port Port
	// Framing splits the stream and frames commands.
	Framing Framing
	// Subject receives every good frame; FixSubject (optional, NMEA
	// only) receives GPS fixes as JSON.
	Subject, FixSubject string
	// Store publishes inbound frames into the local stream capturing
	// their subject and waits for its PubAck (at most StoreWait), rather
	// than a core publish.
	Store     bool
	StoreWait time.Duration
	// CommandSubject (optional) carries messages written to the port;
	// CommandQueue is its queue group, so that one of several gateways
	// sharing it writes a command.
	CommandSubject, CommandQueue string
	// CommandStream and CommandDurable, when set, take the commands from
	// this durable consumer on a local stream instead (CommandSubject, if
	// set, filters it): each is acknowledged only once written to the
	// port, so commands stored while the device is away are written when
	// it is back, in order.
	CommandStream, CommandDurable string
	// QueueLen bounds the commands waiting to be written
	// (DefaultQueueLen when 0).
	QueueLen int
	// LogInterval is the least time between two logs of bad frames
	// (DefaultLogInterval when 0).
	LogInterval time.Duration
}

// Validate checks what the bridge needs to run.
func (c Config) Validate() error {
	var errs []error
	if c.Port.Path == "" {
		errs = append(errs, errors.New("serial: no port path"))
	}
	if _, err := c.Port.mode(); err != nil {
		errs = append(errs, err)
	}
	if c.Port.Baud < 0 || c.Port.ReadTimeout < 0 {
		errs = append(errs, errors.New("serial: baud and read timeout must not be negative"))
	}
	if _, err := c.Framing.NewFramer(); err != nil {
		errs = append(errs, err)
	}
	if c.Subject == "" {
		errs = append(errs, errors.New("serial: no subject"))
	}
	if (c.CommandStream == "") != (c.CommandDurable == "") {
		errs = append(errs, errors.New("serial: a command stream needs a durable, and a durable a stream"))
	}
	if c.FixSubject != "" && c.Framing.Kind != "nmea" {
		errs = append(errs, errors.New("serial: a fix subject needs nmea framing"))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Port.ReadTimeout == 0 {
		c.Port.ReadTimeout = DefaultReadTimeout
	}
	if c.QueueLen == 0 {
		c.QueueLen = DefaultQueueLen
	}
	if c.LogInterval == 0 {
		c.LogInterval = DefaultLogInterval
	}
	if c.StoreWait == 0 {
		c.StoreWait = DefaultStoreWait
	}
	return c
}
