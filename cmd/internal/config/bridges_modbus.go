package config

import (
	"fmt"
	"math"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/leafbox/leafbox/core/subject"
	"github.com/leafbox/leafbox/store/jsapi"
)

// Defaults of a bridges.modbus entry.
const (
	DefaultModbusTimeout      = time.Second
	DefaultModbusPollInterval = time.Second
	DefaultModbusBaud         = 19200
)

// ModbusBridgeConfig is one entry of bridges.modbus: one Modbus bus (an
// RTU serial line or a TCP connection) and the devices polled over it.
type ModbusBridgeConfig struct {
	BridgeCommon `yaml:",inline"`
	// TCP is the host:port of a Modbus TCP device or gateway; set it or
	// RTU.
	TCP string `yaml:"tcp,omitempty"`
	// RTU is the serial line of a Modbus RTU bus.
	RTU *ModbusRTUConfig `yaml:"rtu,omitempty"`
	// Timeout bounds one request (default 1s).
	Timeout Duration `yaml:"timeout,omitempty"`
	// Format of published values: json (the default,
	// {"value":..,"raw":..,"ts":..}) or plain (the value as text).
	Format string `yaml:"format,omitempty"`
	// Delivery is publish (the default) or store (into the local stream
	// that captures the subject, waiting for its acknowledgement).
	Delivery string `yaml:"delivery,omitempty"`
	// Devices are the units on the bus.
	Devices []ModbusDeviceConfig `yaml:"devices,omitempty"`
}

// ModbusRTUConfig is the serial line of a Modbus RTU bus.
type ModbusRTUConfig struct {
	// Port is the device path; a symlink (/dev/serial/by-id/...) is
	// resolved each time it is opened.
	Port string `yaml:"port,omitempty"`
	// Baud (default 19200), DataBits (7 or 8, default 8), Parity (none,
	// the default, even or odd) and StopBits (1, the default, or 2).
	Baud     int    `yaml:"baud,omitempty"`
	DataBits int    `yaml:"data_bits,omitempty"`
	Parity   string `yaml:"parity,omitempty"`
	StopBits int    `yaml:"stop_bits,omitempty"`
}

// ModbusDeviceConfig is one unit on a Modbus bus.
type ModbusDeviceConfig struct {
	// Name identifies the device in status, logs and write replies.
	Name string `yaml:"name,omitempty"`
	// Unit is the unit (slave) id: 1-247 on RTU, 0-255 on TCP (default 1).
	Unit int `yaml:"unit,omitempty"`
	// PollInterval is the time between two polls' starts (default 1s).
	PollInterval Duration `yaml:"poll_interval,omitempty"`
	// SubjectPrefix gives a register without a subject the subject
	// <subject_prefix><register name>.
	SubjectPrefix string `yaml:"subject_prefix,omitempty"`
	// CommandSubject takes write requests: {"register": "setpoint",
	// "value": 21.5}; the reply is {"ok":true} or the device's exception.
	CommandSubject string `yaml:"command_subject,omitempty"`
	// CommandStream and CommandDurable take the write requests from a
	// durable consumer on a local stream instead (command_subject, if
	// set, filters it): each is acknowledged once the device accepted
	// the write, so requests stored while the device is away are written,
	// in order, when it is back. One the device refuses for good (an
	// exception such as illegal data value) or that is not a valid
	// request is terminated and counted as a drop; one lost with the bus
	// or answered "device busy" comes again.
	CommandStream  string `yaml:"command_stream,omitempty"`
	CommandDurable string `yaml:"command_durable,omitempty"`
	// Registers is the register map.
	Registers []ModbusRegisterConfig `yaml:"registers,omitempty"`
}

// ModbusRegisterConfig is one value of a Modbus device.
type ModbusRegisterConfig struct {
	// Name identifies the register in write requests.
	Name string `yaml:"name,omitempty"`
	// Subject receives the value when it changes; without one (and
	// without the device's subject_prefix) the register is write-only.
	Subject string `yaml:"subject,omitempty"`
	// Table is coil (read with function 01, written with 05/15),
	// discrete (02), holding (03; written with 06/16) or input (04).
	Table string `yaml:"table,omitempty"`
	// Address is the 0-based protocol address (register 40001 of the
	// Modicon convention is holding address 0).
	Address int `yaml:"address"`
	// Type is bool (coils and discrete inputs), or uint16 (the default
	// for registers), int16, uint32, int32 or float32; 32-bit types span
	// two registers.
	Type string `yaml:"type,omitempty"`
	// WordOrder of a 32-bit value: big (the default, high word first) or
	// little (low word first).
	WordOrder string `yaml:"word_order,omitempty"`
	// Scale (default 1) and Offset: value = raw*scale + offset.
	Scale  float64 `yaml:"scale,omitempty"`
	Offset float64 `yaml:"offset,omitempty"`
	// Deadband is how much the value must change to be published again.
	Deadband float64 `yaml:"deadband,omitempty"`
	// Writable allows write requests (coil and holding only).
	Writable bool `yaml:"writable,omitempty"`
}

// setModbusBridgeDefaults fills the bridges.modbus entries' defaults.
func (c *Config) setModbusBridgeDefaults() {
	if c.Bridges == nil {
		return
	}
	for i := range c.Bridges.Modbus {
		m := &c.Bridges.Modbus[i]
		setDefault(&m.Timeout, Duration(DefaultModbusTimeout))
		setDefault(&m.Format, "json")
		setDefault(&m.Delivery, "publish")
		if r := m.RTU; r != nil {
			setDefault(&r.Baud, DefaultModbusBaud)
			setDefault(&r.DataBits, 8)
			setDefault(&r.Parity, "none")
			setDefault(&r.StopBits, 1)
		}
		for j := range m.Devices {
			d := &m.Devices[j]
			setDefault(&d.Unit, 1)
			setDefault(&d.PollInterval, Duration(DefaultModbusPollInterval))
			for k := range d.Registers {
				r := &d.Registers[k]
				if r.Subject == "" && d.SubjectPrefix != "" {
					r.Subject = d.SubjectPrefix + r.Name
				}
				if r.Table == "coil" || r.Table == "discrete" {
					setDefault(&r.Type, "bool")
				} else {
					setDefault(&r.Type, "uint16")
				}
				if r.Type == "uint32" || r.Type == "int32" || r.Type == "float32" {
					setDefault(&r.WordOrder, "big")
				}
				setDefault(&r.Scale, 1)
			}
		}
	}
}

// bridgesModbus checks the bridges.modbus entries beyond their names.
func (v *validator) bridgesModbus() {
	for i, m := range v.c.Bridges.Modbus {
		path := fmt.Sprintf("bridges.modbus[%d]", i)
		switch {
		case m.TCP != "" && m.RTU != nil:
			v.errf(path+".tcp", "set tcp or rtu, not both")
		case m.TCP != "":
			host, port, err := net.SplitHostPort(m.TCP)
			if n, perr := strconv.Atoi(port); err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
				v.errf(path+".tcp", "%q is not host:port (Modbus TCP is usually port 502)", m.TCP)
			}
		case m.RTU != nil:
			r := m.RTU
			switch {
			case r.Port == "":
				v.errf(path+".rtu.port", "is required")
			case !filepath.IsAbs(r.Port):
				v.errf(path+".rtu.port", "%q is not an absolute path", r.Port)
			}
			v.serialLine(path+".rtu", r.Baud, r.DataBits, 7, r.Parity, []string{"none", "even", "odd"})
			if r.StopBits != 1 && r.StopBits != 2 {
				v.errf(path+".rtu.stop_bits", "%d is not 1 or 2", r.StopBits)
			}
		default:
			v.errf(path, "needs tcp (host:port) or rtu (a serial port)")
		}
		if m.Timeout <= 0 {
			v.errf(path+".timeout", "must be positive")
		}
		if m.Format != "json" && m.Format != "plain" {
			v.errf(path+".format", "%q is not json or plain", m.Format)
		}
		v.bridgeDelivery(path, m.Delivery)
		if len(m.Devices) == 0 {
			v.errf(path+".devices", "needs at least one device")
		}
		names, durables := map[string]bool{}, map[string]bool{}
		for j, d := range m.Devices {
			dpath := fmt.Sprintf("%s.devices[%d]", path, j)
			switch {
			case d.Name == "":
				v.errf(dpath+".name", "is required")
			case names[d.Name]:
				v.errf(dpath+".name", "%q is used twice", d.Name)
			}
			names[d.Name] = true
			maxUnit := 255
			if m.RTU != nil {
				maxUnit = 247
			}
			if d.Unit < 0 || d.Unit > maxUnit {
				v.errf(dpath+".unit", "%d is out of range (0-%d)", d.Unit, maxUnit)
			}
			if d.PollInterval <= 0 {
				v.errf(dpath+".poll_interval", "must be positive")
			}
			if d.SubjectPrefix != "" && !subject.ValidLiteral(d.SubjectPrefix+"x") {
				v.errf(dpath+".subject_prefix", "%q is not literal subject tokens ending in '.'", d.SubjectPrefix)
			}
			if d.CommandSubject != "" && !subject.ValidLiteral(d.CommandSubject) {
				v.errf(dpath+".command_subject", "%q is not a literal subject", d.CommandSubject)
			}
			v.modbusCommandStream(dpath, d, durables)
			if len(d.Registers) == 0 {
				v.errf(dpath+".registers", "needs at least one register")
			}
			regs := map[string]bool{}
			for k, r := range d.Registers {
				rpath := fmt.Sprintf("%s.registers[%d]", dpath, k)
				switch {
				case r.Name == "":
					v.errf(rpath+".name", "is required")
				case regs[r.Name]:
					v.errf(rpath+".name", "%q is used twice", r.Name)
				}
				regs[r.Name] = true
				v.modbusRegister(rpath, r)
			}
		}
	}
}

// modbusRegister checks one register of a map.
// modbusCommandStream checks a device's command_stream and
// command_durable; durables holds the stream/durable pairs of the bus's
// devices so far (a durable consumer belongs to one device).
func (v *validator) modbusCommandStream(path string, d ModbusDeviceConfig, durables map[string]bool) {
	if d.CommandStream == "" && d.CommandDurable == "" {
		return
	}
	switch {
	case d.CommandStream == "":
		v.errf(path+".command_durable", "needs command_stream")
	case d.CommandDurable == "":
		v.errf(path+".command_stream", "needs command_durable")
	}
	for _, n := range []struct{ key, val string }{{"command_stream", d.CommandStream}, {"command_durable", d.CommandDurable}} {
		if err := jsapi.CheckName(n.val); n.val != "" && err != nil {
			v.errf(path+"."+n.key, "%q is not a valid name: %v", n.val, err)
		}
	}
	if key := d.CommandStream + " " + d.CommandDurable; durables[key] {
		v.errf(path+".command_durable", "%q on %q is used by another device", d.CommandDurable, d.CommandStream)
	} else {
		durables[key] = true
	}
	if js := v.c.JetStream; js == nil || !js.Enabled {
		v.errf(path+".command_stream", "needs jetstream enabled")
	}
}

func (v *validator) modbusRegister(path string, r ModbusRegisterConfig) {
	words := 1
	switch r.Table {
	case "coil", "discrete":
		if r.Type != "bool" {
			v.errf(path+".type", "a %s is a bool, not %q", r.Table, r.Type)
		}
	case "holding", "input":
		switch r.Type {
		case "uint16", "int16":
		case "uint32", "int32", "float32":
			words = 2
		default:
			v.errf(path+".type", "%q is not uint16, int16, uint32, int32 or float32", r.Type)
		}
	default:
		v.errf(path+".table", "%q is not coil, discrete, holding or input", r.Table)
	}
	if r.Address < 0 || r.Address+words > 65536 {
		v.errf(path+".address", "%d is out of range (0-%d)", r.Address, 65536-words)
	}
	switch {
	case words == 1 && r.WordOrder != "":
		v.errf(path+".word_order", "applies to 32-bit types only")
	case words == 2 && r.WordOrder != "big" && r.WordOrder != "little":
		v.errf(path+".word_order", "%q is not big or little", r.WordOrder)
	}
	if r.Writable && r.Table != "coil" && r.Table != "holding" {
		v.errf(path+".writable", "a %s cannot be written", r.Table)
	}
	switch {
	case r.Subject == "" && !r.Writable:
		v.errf(path+".subject", "is required for a register that is not writable")
	case r.Subject != "" && !subject.ValidLiteral(r.Subject):
		v.errf(path+".subject", "%q is not a subject to publish on", r.Subject)
	}
	for _, f := range []struct {
		key string
		val float64
	}{{"scale", r.Scale}, {"offset", r.Offset}, {"deadband", r.Deadband}} {
		if math.IsNaN(f.val) || math.IsInf(f.val, 0) {
			v.errf(path+"."+f.key, "must be a finite number")
		}
	}
	if r.Scale == 0 {
		v.errf(path+".scale", "must not be 0")
	}
	if r.Deadband < 0 {
		v.errf(path+".deadband", "must not be negative")
	}
	if (r.Table == "coil" || r.Table == "discrete") && (r.Scale != 1 || r.Offset != 0 || r.Deadband != 0) {
		v.errf(path, "scale, offset and deadband apply to registers, not to a %s", r.Table)
	}
}
