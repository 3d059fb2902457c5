package modbus

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of a Config's zero fields.
const (
	DefaultTimeout      = time.Second
	DefaultPollInterval = time.Second
	DefaultBaud         = 19200
	DefaultQueueLen     = 16
	DefaultStoreWait    = 5 * time.Second
)

// The register tables, by the function code that reads them.
const (
	TableCoil     = "coil"     // 01 read, 05/15 write
	TableDiscrete = "discrete" // 02 read
	TableHolding  = "holding"  // 03 read, 06/16 write
	TableInput    = "input"    // 04 read
)

// The data types of a register.
const (
	TypeBool    = "bool"
	TypeUint16  = "uint16"
	TypeInt16   = "int16"
	TypeUint32  = "uint32"
	TypeInt32   = "int32"
	TypeFloat32 = "float32"
)

// Config is one Modbus bridge: one bus (a serial line or a TCP
// connection) and the devices polled over it.
type Config struct {
	// TCP is the "host:port" of a Modbus TCP device or gateway; empty
	// for RTU.
	TCP string
	// RTU is the serial line for Modbus RTU, used when TCP is empty.
	RTU Line
	// Timeout bounds one request (DefaultTimeout when 0).
	Timeout time.Duration
	// Plain publishes values as text ("21.5", "true") instead of JSON
	// ({"value":..,"raw":..,"ts":..}).
	Plain bool
	// Store publishes values into the local stream that captures their
	// subject and waits for its PubAck (at most StoreWait).
	Store     bool
	StoreWait time.Duration
	// QueueLen bounds the write requests waiting for the bus
	// (DefaultQueueLen when 0); one beyond it is answered "write queue
	// full" and counted as a drop.
	QueueLen int
	// Devices are polled in turn.
	Devices []Device
}

// Line is a serial line for Modbus RTU.
type Line struct {
	// Path is the device; a symlink (/dev/serial/by-id/...) is resolved
	// at each open.
	Path string
	// Baud (DefaultBaud when 0), DataBits (8 when 0), Parity ("none"
	// when empty, "even", "odd"), StopBits (1 when 0, or 2).
	Baud, DataBits int
	Parity         string
	StopBits       int
}

// Device is one Modbus unit on the bus.
type Device struct {
	// Name identifies the device in logs, status and command replies.
	Name string
	// Unit is the unit (slave) id: 1 to 247 on RTU; often 1 or 255
	// behind TCP.
	Unit uint8
	// PollInterval is the time between the starts of two polls
	// (DefaultPollInterval when 0).
	PollInterval time.Duration
	// CommandSubject (optional) receives write requests
	// ({"register": "setpoint", "value": 21.5}); the reply says
	// {"ok":true} or the exception.
	CommandSubject string
	// CommandStream and CommandDurable, when set, take the write
	// requests from this durable consumer on a local stream instead
	// (CommandSubject, if set, filters it): each is acknowledged only once
	// the device accepted the write, so requests stored while the device
	// is away are written when it is back, in order. A request the device
	// refuses with an exception that retrying cannot cure, or that is not
	// a valid request, is terminated and counted as a drop; one lost with
	// the bus, or refused with "server device busy" or "acknowledge", is
	// sent again by the stream.
	CommandStream, CommandDurable string
	// Registers are what is polled and written.
	Registers []Register
}

// Register is one value of a device.
type Register struct {
	// Name identifies the register in write requests.
	Name string
	// Subject receives the value when it changes (by more than
	// Deadband); empty for a write-only register.
	Subject string
	// Table is TableCoil, TableDiscrete, TableHolding or TableInput.
	Table string
	// Address is the register's or bit's 0-based protocol address.
	Address uint16
	// Type is the data type (TypeBool for coils and discrete inputs;
	// uint16 when empty for registers); 32-bit types span two
	// registers.
	Type string
	// LowWordFirst orders a 32-bit value's registers low word first
	// (CDAB); by default the high word comes first (ABCD).
	LowWordFirst bool
	// Scale (1 when 0) and Offset turn the raw value into the published
	// one: value = raw*Scale + Offset.
	Scale, Offset float64
	// Deadband is how much the value must change to be published again;
	// 0 publishes every change.
	Deadband float64
	// Writable allows write requests (coils and holding registers only).
	Writable bool
}

// words is the number of 16-bit registers (or bits) the value spans.
func (r Register) words() int {
	switch r.Type {
	case TypeUint32, TypeInt32, TypeFloat32:
		return 2
	}
	return 1
}

func (r Register) bits() bool { return r.Table == TableCoil || r.Table == TableDiscrete }

func (r Register) scale() float64 {
	if r.Scale == 0 {
		return 1
	}
	return r.Scale
}

// Validate checks the configuration.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf("modbus: "+format, args...)) }
	if c.TCP == "" && c.RTU.Path == "" {
		add("neither a TCP address nor an RTU line")
	}
	if c.TCP == "" {
		if c.RTU.DataBits != 0 && (c.RTU.DataBits < 7 || c.RTU.DataBits > 8) {
			add("data bits %d is not 7 or 8", c.RTU.DataBits)
		}
		switch c.RTU.Parity {
		case "", "none", "even", "odd":
		default:
			add("parity %q is not none, even or odd", c.RTU.Parity)
		}
		if c.RTU.StopBits != 0 && c.RTU.StopBits != 1 && c.RTU.StopBits != 2 {
			add("stop bits %d is not 1 or 2", c.RTU.StopBits)
		}
	}
	if c.Timeout < 0 {
		add("negative timeout")
	}
	if c.QueueLen < 0 {
		add("negative queue length")
	}
	if len(c.Devices) == 0 {
		add("no devices")
	}
	names := map[string]bool{}
	for _, d := range c.Devices {
		if d.Name == "" || names[d.Name] {
			add("device name %q is empty or used twice", d.Name)
		}
		names[d.Name] = true
		if d.PollInterval < 0 {
			add("device %s: negative poll interval", d.Name)
		}
		if (d.CommandStream == "") != (d.CommandDurable == "") {
			add("device %s: a command stream needs a durable name, and a durable a stream", d.Name)
		}
		regs := map[string]bool{}
		for _, r := range d.Registers {
			if err := r.validate(); err != nil {
				add("device %s: register %q: %v", d.Name, r.Name, err)
			}
			if regs[r.Name] {
				add("device %s: register %q is used twice", d.Name, r.Name)
			}
			regs[r.Name] = true
		}
	}
	return errors.Join(errs...)
}

func (r Register) validate() error {
	if r.Name == "" {
		return errors.New("no name")
	}
	switch r.Table {
	case TableCoil, TableDiscrete:
		if r.Type != TypeBool && r.Type != "" {
			return fmt.Errorf("a %s is a bool, not %s", r.Table, r.Type)
		}
	case TableHolding, TableInput:
		switch r.Type {
		case "", TypeUint16, TypeInt16, TypeUint32, TypeInt32, TypeFloat32:
		default:
			return fmt.Errorf("type %q is not uint16, int16, uint32, int32 or float32", r.Type)
		}
	default:
		return fmt.Errorf("table %q is not coil, discrete, holding or input", r.Table)
	}
	if int(r.Address)+r.words() > 1<<16 {
		return fmt.Errorf("address %d leaves no room for %d registers", r.Address, r.words())
	}
	if r.Writable && r.Table != TableCoil && r.Table != TableHolding {
		return fmt.Errorf("a %s cannot be written", r.Table)
	}
	if r.Subject == "" && !r.Writable {
		return errors.New("neither a subject nor writable")
	}
	for _, f := range []float64{r.Scale, r.Offset, r.Deadband} {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return errors.New("scale, offset and deadband must be finite")
		}
	}
	if r.Deadband < 0 {
		return errors.New("negative deadband")
	}
	return nil
}

func (c Config) withDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.QueueLen == 0 {
		c.QueueLen = DefaultQueueLen
	}
	if c.StoreWait == 0 {
		c.StoreWait = DefaultStoreWait
	}
	if c.RTU.Baud == 0 {
		c.RTU.Baud = DefaultBaud
	}
	if c.RTU.DataBits == 0 {
		c.RTU.DataBits = 8
	}
	if c.RTU.StopBits == 0 {
		c.RTU.StopBits = 1
	}
	devs := make([]Device, len(c.Devices))
	for i, d := range c.Devices {
		if d.PollInterval == 0 {
			d.PollInterval = DefaultPollInterval
		}
		regs := make([]Register, len(d.Registers))
		for j, r := range d.Registers {
			if r.Type == "" {
				r.Type = TypeUint16
				if r.bits() {
					r.Type = TypeBool
				}
			}
			regs[j] = r
		}
		d.Registers = regs
		devs[i] = d
	}
	c.Devices = devs
	return c
}
