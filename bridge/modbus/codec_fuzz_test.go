package modbus

import (
	"math"
	"testing"
)

var fuzzTypes = []string{TypeUint16, TypeInt16, TypeUint32, TypeInt32, TypeFloat32}

// FuzzCodec: any two registers decode without panic, and the decoded
// value (unscaled) encodes back to the same registers.
func FuzzCodec(f *testing.F) {
	f.Add(uint16(0x4049), uint16(0x0fdb), uint8(4), false)
	f.Add(uint16(0xffff), uint16(0xfffe), uint8(3), true)
	f.Fuzz(func(t *testing.T, w0, w1 uint16, typ uint8, lowFirst bool) {
		r := Register{Type: fuzzTypes[int(typ)%len(fuzzTypes)], LowWordFirst: lowFirst}
		words := []uint16{w0, w1}[:r.words()]
		v := decode(r, words)
		if r.Type == TypeFloat32 && (math.IsNaN(v.Number) || math.IsInf(v.Number, 0)) {
			return
		}
		back, err := encode(r, v.Number)
		if err != nil {
			t.Fatalf("%s %v decoded to %v, which does not encode: %v", r.Type, words, v.Number, err)
		}
		for i := range words {
			if back[i] != words[i] {
				t.Fatalf("%s %v → %v → %v", r.Type, words, v.Number, back)
			}
		}
	})
}

// FuzzWriteRequest: any request body against a register map parses or
// fails without panic; what parses is a function the register allows,
// within the protocol's sizes and the address space.
func FuzzWriteRequest(f *testing.F) {
	f.Add([]byte(`{"register":"setpoint","value":21.5}`))
	f.Add([]byte(`{"register":"pump","value":[true,false]}`))
	f.Add([]byte(`{"register":"limit","value":[1e3,-2]}`))
	f.Add([]byte(`{"register":"top","value":[1,2,3]}`))
	regs := []Register{
		{Name: "setpoint", Table: TableHolding, Address: 20, Scale: 0.1, Writable: true},
		{Name: "limit", Table: TableHolding, Address: 30, Type: TypeFloat32, Writable: true},
		{Name: "count", Table: TableHolding, Address: 40, Type: TypeInt32, LowWordFirst: true, Writable: true},
		{Name: "pump", Table: TableCoil, Address: 3, Type: TypeBool, Writable: true},
		{Name: "top", Table: TableHolding, Address: 65534, Writable: true},
		{Name: "ro", Subject: "x", Table: TableHolding, Address: 1},
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		op, err := parseWrite(regs, data)
		if err != nil {
			return
		}
		n := max(len(op.words), len(op.bits))
		switch op.function {
		case 5, 6:
			if n != 1 {
				t.Fatalf("function %d with %d values", op.function, n)
			}
		case 15, 16:
			if n < 1 || n > 1968 {
				t.Fatalf("function %d with %d values", op.function, n)
			}
		default:
			t.Fatalf("function %d", op.function)
		}
		if int(op.address)+n > 1<<16 {
			t.Fatalf("write of %d from %d runs past the address space", n, op.address)
		}
		if (op.function == 5 || op.function == 15) != (op.bits != nil) {
			t.Fatalf("function %d with bits %v words %v", op.function, op.bits, op.words)
		}
	})
}
