package modbus

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/creack/pty"
	"github.com/leafbox/leafbox/core/require"
	mb "github.com/simonvetter/modbus"
)

// bank is one test device's memory; it answers as simonvetter/modbus's
// server handler, and the RTU slave below calls the same methods.
// Addresses at and above refuseFrom answer "illegal data address".
type bank struct {
	mu         sync.Mutex
	coils      [1024]bool
	discrete   [1024]bool
	holding    [1024]uint16
	input      [1024]uint16
	refuseFrom uint16
	// reads receives the time of every read of holding registers, when
	// set; bump adds 1 to each holding register read, after the read.
	reads chan time.Time
	bump  bool
	// delay holds each read of holding registers this long before it is
	// answered (a slow device).
	delay time.Duration
	// slowRead, when not 0, holds the slowRead-th read of holding
	// registers (counting from 1) slowBy longer than delay: one poll that
	// overruns.
	slowRead int
	slowBy   time.Duration
	nread    int
	// busyWrites answers this many writes of holding registers "server
	// device busy".
	busyWrites int
}

func newBank() *bank { return &bank{refuseFrom: 1000} }

func (b *bank) check(addr, n uint16) error {
	if int(addr)+int(n) > int(b.refuseFrom) {
		return mb.ErrIllegalDataAddress
	}
	return nil
}

func (b *bank) HandleCoils(req *mb.CoilsRequest) ([]bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.check(req.Addr, req.Quantity); err != nil {
		return nil, err
	}
	if req.IsWrite {
		copy(b.coils[req.Addr:], req.Args)
		return nil, nil
	}
	return append([]bool{}, b.coils[req.Addr:req.Addr+req.Quantity]...), nil
}

func (b *bank) HandleDiscreteInputs(req *mb.DiscreteInputsRequest) ([]bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.check(req.Addr, req.Quantity); err != nil {
		return nil, err
	}
	return append([]bool{}, b.discrete[req.Addr:req.Addr+req.Quantity]...), nil
}

func (b *bank) HandleHoldingRegisters(req *mb.HoldingRegistersRequest) ([]uint16, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.check(req.Addr, req.Quantity); err != nil {
		return nil, err
	}
	if req.IsWrite && b.busyWrites > 0 {
		b.busyWrites--
		return nil, mb.ErrServerDeviceBusy
	}
	if req.IsWrite {
		copy(b.holding[req.Addr:], req.Args)
		return nil, nil
	}
	if b.reads != nil {
		select {
		case b.reads <- time.Now():
		default:
		}
	}
	b.nread++
	delay := b.delay
	if b.nread == b.slowRead {
		delay += b.slowBy
	}
	if delay > 0 {
		time.Sleep(delay) // the device's response time, which is what is tested
	}
	out := append([]uint16{}, b.holding[req.Addr:req.Addr+req.Quantity]...)
	if b.bump {
		for i := req.Addr; i < req.Addr+req.Quantity; i++ {
			b.holding[i]++
		}
	}
	return out, nil
}

func (b *bank) HandleInputRegisters(req *mb.InputRegistersRequest) ([]uint16, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.check(req.Addr, req.Quantity); err != nil {
		return nil, err
	}
	return append([]uint16{}, b.input[req.Addr:req.Addr+req.Quantity]...), nil
}

func (b *bank) setHolding(addr uint16, vals ...uint16) {
	b.mu.Lock()
	copy(b.holding[addr:], vals)
	b.mu.Unlock()
}

func (b *bank) getHolding(addr uint16) uint16 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.holding[addr]
}

func (b *bank) getCoil(addr uint16) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.coils[addr]
}

// units routes by unit id; a unit not in it is silent, as an absent RTU
// slave is.
type units map[uint8]*bank

// startTCPSlave serves units over Modbus TCP on 127.0.0.1:0 with
// simonvetter/modbus's server and returns its address.
func startTCPSlave(t *testing.T, b *bank, addr string) (string, *mb.ModbusServer) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	srv, err := mb.NewServer(&mb.ServerConfiguration{URL: "tcp://" + addr, MaxClients: 4, Timeout: time.Minute,
		Logger: quietLog()}, b)
	require.NoError(t, err)
	require.NoError(t, srv.Start())
	t.Cleanup(func() { _ = srv.Stop() })
	return listenAddr(srv), srv
}

// listenAddr reads the server's bound address: the library keeps its
// listener unexported and has no accessor, and the tests bind port 0.
func listenAddr(srv *mb.ModbusServer) string {
	f := reflect.ValueOf(srv).Elem().FieldByName("tcpListener")
	ln := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(net.Listener)
	return ln.Addr().String()
}

// rtuSlave plays Modbus RTU devices on the master side of a pty.
type rtuSlave struct {
	master, tty *os.File
	units       units
	done        chan struct{}
	// corrupt, while set, flips a bit of every answer's CRC.
	corrupt atomic.Bool
}

// newRTUSlave opens a pty pair, points link at its slave side and
// answers requests for units until unplugged.
func newRTUSlave(t *testing.T, link string, u units) *rtuSlave {
	t.Helper()
	master, tty, err := pty.Open()
	require.NoError(t, err)
	_ = os.Remove(link)
	require.NoError(t, os.Symlink(tty.Name(), link))
	s := &rtuSlave{master: master, tty: tty, units: u, done: make(chan struct{})}
	go s.serve()
	t.Cleanup(s.unplug)
	return s
}

func (s *rtuSlave) unplug() {
	s.master.Close()
	s.tty.Close()
	<-s.done
}

func rtuLink(t *testing.T) string {
	return filepath.Join(t.TempDir(), "usb-leafbox_rtu-if00-port0")
}

// crc16 is Modbus's CRC (over serial line v1.02 §6.2.2: polynomial
// 0xA001 reflected, initial 0xFFFF), sent low byte first.
func crc16(b []byte) uint16 {
	crc := uint16(0xffff)
	for _, c := range b {
		crc ^= uint16(c)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ 0xa001
			} else {
				crc >>= 1
			}
		}
	}
	return crc
}

func withCRC(b []byte) []byte { return binary.LittleEndian.AppendUint16(b, crc16(b)) }

// serve reads request frames (unit, function, fields by function, CRC)
// and answers them; a frame with a bad CRC or for an absent unit gets no
// answer.
func (s *rtuSlave) serve() {
	defer close(s.done)
	r := bufio.NewReader(s.master)
	for {
		head := make([]byte, 7)
		if _, err := io.ReadFull(r, head[:6]); err != nil {
			return
		}
		frame := head[:6]
		fn := head[1]
		switch fn {
		case 15, 16: // address, quantity, byte count, values
			c, err := r.ReadByte()
			if err != nil {
				return
			}
			frame = append(frame, c)
			rest := make([]byte, int(c)+2)
			if _, err := io.ReadFull(r, rest); err != nil {
				return
			}
			frame = append(frame, rest...)
		default:
			crc := make([]byte, 2)
			if _, err := io.ReadFull(r, crc); err != nil {
				return
			}
			frame = append(frame, crc...)
		}
		body := frame[:len(frame)-2]
		if crc16(body) != binary.LittleEndian.Uint16(frame[len(frame)-2:]) {
			continue
		}
		b, ok := s.units[frame[0]]
		if !ok {
			continue
		}
		out := withCRC(answer(b, body))
		if s.corrupt.Load() {
			out[len(out)-1] ^= 0x01
		}
		if _, err := s.master.Write(out); err != nil {
			return
		}
	}
}

// answer builds the response PDU (with the unit id) to one request.
func answer(b *bank, req []byte) []byte {
	unit, fn := req[0], req[1]
	addr := binary.BigEndian.Uint16(req[2:])
	qty := binary.BigEndian.Uint16(req[4:])
	out := []byte{unit, fn}
	var err error
	packBits := func(bits []bool) {
		bytes := make([]byte, (len(bits)+7)/8)
		for i, v := range bits {
			if v {
				bytes[i/8] |= 1 << (i % 8)
			}
		}
		out = append(out, byte(len(bytes)))
		out = append(out, bytes...)
	}
	packWords := func(words []uint16) {
		out = append(out, byte(2*len(words)))
		for _, w := range words {
			out = binary.BigEndian.AppendUint16(out, w)
		}
	}
	switch fn {
	case 1:
		var bits []bool
		if bits, err = b.HandleCoils(&mb.CoilsRequest{UnitId: unit, Addr: addr, Quantity: qty}); err == nil {
			packBits(bits)
		}
	case 2:
		var bits []bool
		if bits, err = b.HandleDiscreteInputs(&mb.DiscreteInputsRequest{UnitId: unit, Addr: addr, Quantity: qty}); err == nil {
			packBits(bits)
		}
	case 3:
		var words []uint16
		if words, err = b.HandleHoldingRegisters(&mb.HoldingRegistersRequest{UnitId: unit, Addr: addr, Quantity: qty}); err == nil {
			packWords(words)
		}
	case 4:
		var words []uint16
		if words, err = b.HandleInputRegisters(&mb.InputRegistersRequest{UnitId: unit, Addr: addr, Quantity: qty}); err == nil {
			packWords(words)
		}
	case 5:
		_, err = b.HandleCoils(&mb.CoilsRequest{UnitId: unit, Addr: addr, Quantity: 1, IsWrite: true, Args: []bool{qty == 0xff00}})
		out = append(out, req[2:6]...)
	case 6:
		_, err = b.HandleHoldingRegisters(&mb.HoldingRegistersRequest{UnitId: unit, Addr: addr, Quantity: 1, IsWrite: true, Args: []uint16{qty}})
		out = append(out, req[2:6]...)
	case 15:
		bits := make([]bool, qty)
		for i := range bits {
			bits[i] = req[7+i/8]&(1<<(i%8)) != 0
		}
		_, err = b.HandleCoils(&mb.CoilsRequest{UnitId: unit, Addr: addr, Quantity: qty, IsWrite: true, Args: bits})
		out = append(out, req[2:6]...)
	case 16:
		words := make([]uint16, qty)
		for i := range words {
			words[i] = binary.BigEndian.Uint16(req[7+2*i:])
		}
		_, err = b.HandleHoldingRegisters(&mb.HoldingRegistersRequest{UnitId: unit, Addr: addr, Quantity: qty, IsWrite: true, Args: words})
		out = append(out, req[2:6]...)
	default:
		err = mb.ErrIllegalFunction
	}
	if err != nil {
		code := byte(4)
		switch {
		case errors.Is(err, mb.ErrIllegalFunction):
			code = 1
		case errors.Is(err, mb.ErrIllegalDataAddress):
			code = 2
		case errors.Is(err, mb.ErrIllegalDataValue):
			code = 3
		}
		return []byte{unit, fn | 0x80, code}
	}
	return out
}

func quietLog() *log.Logger { return log.New(io.Discard, "", 0) }
