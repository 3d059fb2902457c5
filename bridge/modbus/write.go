package modbus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/leafbox/leafbox/bridge"
	mb "github.com/simonvetter/modbus"
)

// WriteRequest is the JSON of a write request on a device's command
// subject. Value is a number for a holding register (in published units:
// scale and offset are undone), true or false for a coil, or an array of
// either to write consecutive registers or coils from the named one's
// address (function 16 or 15).
type WriteRequest struct {
	Register string          `json:"register"`
	Value    json.RawMessage `json:"value"`
}

// writeResult is a write request's reply.
type writeResult struct {
	OK bool `json:"ok,omitempty"`
	// Function is the function code used (5, 6, 15 or 16).
	Function int `json:"function,omitempty"`
	// Error says why the write failed; Exception is the device's
	// exception, if that was why.
	Error     string `json:"error,omitempty"`
	Exception string `json:"exception,omitempty"`
}

// writeOp is a parsed write: the function, the address and what to
// write.
type writeOp struct {
	function int
	address  uint16
	words    []uint16
	bits     []bool
}

// parseWrite checks a write request against a device's registers and
// returns the operation (pure: the fuzz target's subject).
func parseWrite(regs []Register, data []byte) (writeOp, error) {
	var req WriteRequest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return writeOp{}, fmt.Errorf("modbus: write request is not {\"register\":..,\"value\":..}: %w", err)
	}
	var r *Register
	for i := range regs {
		if regs[i].Name == req.Register {
			r = &regs[i]
		}
	}
	switch {
	case r == nil:
		return writeOp{}, fmt.Errorf("modbus: no register %q", req.Register)
	case !r.Writable:
		return writeOp{}, fmt.Errorf("modbus: register %q is not writable", req.Register)
	case len(req.Value) == 0:
		return writeOp{}, errors.New("modbus: write request has no value")
	}
	op := writeOp{address: r.Address}
	many := bytes.HasPrefix(bytes.TrimSpace(req.Value), []byte("["))
	if r.Table == TableCoil {
		var bits []bool
		if many {
			if err := json.Unmarshal(req.Value, &bits); err != nil {
				return writeOp{}, fmt.Errorf("modbus: coil %q takes true, false or an array of them: %w", r.Name, err)
			}
		} else {
			var b bool
			if err := json.Unmarshal(req.Value, &b); err != nil {
				return writeOp{}, fmt.Errorf("modbus: coil %q takes true or false: %w", r.Name, err)
			}
			bits = []bool{b}
		}
		op.function, op.bits = 5, bits
		if many {
			op.function = 15
		}
		if err := op.checkSize(1968); err != nil { // §6.11: at most 0x7B0 coils
			return writeOp{}, err
		}
		return op, nil
	}
	var nums []float64
	if many {
		if err := json.Unmarshal(req.Value, &nums); err != nil {
			return writeOp{}, fmt.Errorf("modbus: register %q takes a number or an array of numbers: %w", r.Name, err)
		}
	} else {
		var n float64
		if err := json.Unmarshal(req.Value, &n); err != nil {
			return writeOp{}, fmt.Errorf("modbus: register %q takes a number: %w", r.Name, err)
		}
		nums = []float64{n}
	}
	for _, n := range nums {
		w, err := encode(*r, n)
		if err != nil {
			return writeOp{}, err
		}
		op.words = append(op.words, w...)
	}
	op.function = 16
	if len(op.words) == 1 && !many {
		op.function = 6
	}
	if err := op.checkSize(123); err != nil { // §6.12: at most 0x7B registers
		return writeOp{}, err
	}
	return op, nil
}

func (op writeOp) checkSize(limit int) error {
	n := max(len(op.words), len(op.bits))
	if n == 0 || n > limit {
		return fmt.Errorf("modbus: a write covers 1 to %d values, not %d", limit, n)
	}
	if int(op.address)+n > 1<<16 {
		return fmt.Errorf("modbus: %d values from address %d run past the last address", n, op.address)
	}
	return nil
}

// write runs one write request and answers it; it returns an error only
// when the bus failed.
func (p *poller) write(w writeReq) error {
	st := p.env.Status
	op, err := parseWrite(w.dev.Registers, w.data)
	if err != nil {
		st.CountDrop(bridge.DropRejected)
		if w.delivery != nil { // it can never be written
			st.SetError(fmt.Errorf("modbus: device %s: command %d of %s: %w", w.dev.Name, w.delivery.Sequence,
				w.delivery.Stream, err))
			_ = w.delivery.Term()
			return nil
		}
		reply(p.env.Bus, w.reply, writeResult{Error: err.Error()})
		return nil
	}
	if err := p.client.SetUnitId(w.dev.Unit); err != nil {
		return err
	}
	switch op.function {
	case 5:
		err = p.client.WriteCoil(op.address, op.bits[0])
	case 15:
		err = p.client.WriteCoils(op.address, op.bits)
	case 6:
		err = p.client.WriteRegister(op.address, op.words[0])
	default:
		err = p.client.WriteRegisters(op.address, op.words)
	}
	if err == nil {
		w.dev.stats.writes.Add(1)
		p.timeouts = 0
		if w.delivery != nil {
			// Counted out once the stream has the acknowledgement.
			if aerr := w.delivery.Ack(); aerr != nil {
				return fmt.Errorf("modbus: device %s: acknowledging command %d of %s: %w", w.dev.Name,
					w.delivery.Sequence, w.delivery.Stream, aerr)
			}
			st.CountOut(1)
			return nil
		}
		st.CountOut(1)
		reply(p.env.Bus, w.reply, writeResult{OK: true, Function: op.function})
		return nil
	}
	if w.delivery != nil {
		if settle(w.delivery, err) {
			st.CountDrop(bridge.DropRejected)
		}
	} else {
		st.CountDrop(bridge.DropRejected)
		reply(p.env.Bus, w.reply, writeResult{Function: op.function, Error: err.Error(), Exception: exceptionName(err)})
	}
	return p.failed(w.dev, err, fmt.Sprintf("writing function %d at %d", op.function, op.address))
}

// retryDelay is how long a write from a stream that the device answered
// "busy" waits before the stream sends it again.
const retryDelay = 100 * time.Millisecond

// settle settles a stream write the device did not accept: an exception
// retrying cannot cure (illegal function, address or value, a device
// failure) terminates it; "server device busy" and "acknowledge" (the
// device is occupied with a long request) send it again after
// retryDelay, a register write being idempotent; a write lost with the
// bus (timeout, bad frame, bus failure) is sent again at once. It
// reports whether it terminated d.
func settle(d *bridge.Delivery, err error) (terminated bool) {
	switch {
	case errors.Is(err, mb.ErrServerDeviceBusy), errors.Is(err, mb.ErrAcknowledge):
		_ = d.Nak(retryDelay)
	case classify(err) == errException:
		_ = d.Term()
		return true
	default:
		_ = d.Nak(0)
	}
	return false
}

// reply answers a requester, if it asked.
func reply(bus bridge.Bus, to string, res writeResult) {
	if to == "" {
		return
	}
	data, _ := json.Marshal(res)
	bus.Publish(to, "", nil, data)
}
