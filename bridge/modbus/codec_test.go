package modbus

import (
	"math"
	"testing"
)

func TestDecode(t *testing.T) {
	f := math.Float32bits(-1.5)
	cases := []struct {
		name  string
		reg   Register
		words []uint16
		want  float64
		raw   any
	}{
		{"uint16", Register{Type: TypeUint16}, []uint16{65535}, 65535, int64(65535)},
		{"int16", Register{Type: TypeInt16}, []uint16{0xfffe}, -2, int64(-2)},
		{"uint32 high first", Register{Type: TypeUint32}, []uint16{0x0001, 0x0002}, 65538, int64(65538)},
		{"uint32 low first", Register{Type: TypeUint32, LowWordFirst: true}, []uint16{0x0002, 0x0001}, 65538, int64(65538)},
		{"int32", Register{Type: TypeInt32}, []uint16{0xffff, 0xff38}, -200, int64(-200)},
		{"float32", Register{Type: TypeFloat32}, []uint16{uint16(f >> 16), uint16(f)}, -1.5, -1.5},
		{"float32 low first", Register{Type: TypeFloat32, LowWordFirst: true}, []uint16{uint16(f), uint16(f >> 16)}, -1.5, -1.5},
		{"scale and offset", Register{Type: TypeInt16, Scale: 0.01, Offset: -40}, []uint16{6543}, 25.43, int64(6543)},
		{"scale above one", Register{Type: TypeUint16, Scale: 2.5}, []uint16{4}, 10, int64(4)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := decode(tc.reg, tc.words)
			if v.Number != tc.want || v.Raw != tc.raw {
				t.Fatalf("decode = %v (raw %v), want %v (raw %v)", v.Number, v.Raw, tc.want, tc.raw)
			}
			words, err := encode(tc.reg, v.Number)
			if err != nil || len(words) != len(tc.words) || words[0] != tc.words[0] || words[len(words)-1] != tc.words[len(words)-1] {
				t.Fatalf("encode(%v) = %v, %v, want %v", v.Number, words, err, tc.words)
			}
		})
	}
	for _, bad := range []struct {
		reg Register
		v   float64
	}{{Register{Type: TypeUint16}, -1}, {Register{Type: TypeInt16}, 40000}, {Register{Type: TypeUint16, Scale: 0.1}, 6553.6}, {Register{Type: TypeFloat32}, math.NaN()}} {
		if _, err := encode(bad.reg, bad.v); err == nil {
			t.Fatalf("encode(%+v, %v) accepted", bad.reg, bad.v)
		}
	}
}

func TestChanged(t *testing.T) {
	r := Register{Type: TypeUint16, Deadband: 1}
	if changed(r, Value{Number: 10}, Value{Number: 11}) || !changed(r, Value{Number: 10}, Value{Number: 11.5}) || !changed(r, Value{Number: 10}, Value{Number: 8.9}) {
		t.Fatal("deadband 1 misjudged")
	}
	r.Deadband = 0
	if changed(r, Value{Number: 10}, Value{Number: 10}) || !changed(r, Value{Number: 10}, Value{Number: 10.001}) {
		t.Fatal("deadband 0 misjudged")
	}
	b := Register{Type: TypeBool}
	if changed(b, Value{Bool: true}, Value{Bool: true}) || !changed(b, Value{Bool: true}, Value{Bool: false}) {
		t.Fatal("bool change misjudged")
	}
}

func TestAppendValue(t *testing.T) {
	r := Register{Type: TypeFloat32}
	got := string(appendValue(nil, r, Value{Raw: float64(float32(0.1)), Number: float64(float32(0.1))}, "2026-01-02T03:04:05.000Z", false))
	if got != `{"value":0.1,"raw":0.1,"ts":"2026-01-02T03:04:05.000Z"}` {
		t.Fatalf("float32 JSON = %s", got)
	}
	if got := string(appendValue(nil, Register{Type: TypeBool}, Value{Raw: true, Bool: true}, "", true)); got != "true" {
		t.Fatalf("plain bool = %s", got)
	}
	if got := string(appendValue(nil, r, Value{Raw: math.NaN(), Number: math.NaN()}, "x", false)); got != `{"value":null,"raw":null,"ts":"x"}` {
		t.Fatalf("NaN = %s", got)
	}
}

func TestPlan(t *testing.T) {
	regs := []Register{
		{Name: "a", Subject: "s", Table: TableHolding, Address: 10, Type: TypeUint32},
		{Name: "b", Subject: "s", Table: TableHolding, Address: 12},
		{Name: "c", Subject: "s", Table: TableHolding, Address: 14}, // gap: new block
		{Name: "d", Subject: "s", Table: TableCoil, Address: 0, Type: TypeBool},
		{Name: "e", Subject: "s", Table: TableCoil, Address: 1, Type: TypeBool},
		{Name: "w", Table: TableHolding, Address: 13, Writable: true}, // write-only: not polled
		{Name: "big", Subject: "s", Table: TableInput, Address: 0},
		{Name: "big2", Subject: "s", Table: TableInput, Address: 124, Type: TypeUint32}, // 126 words: split
	}
	blocks := plan(regs)
	type shape struct {
		table     string
		addr, qty uint16
		n         int
	}
	var got []shape
	for _, b := range blocks {
		got = append(got, shape{b.table, b.address, b.quantity, len(b.regs)})
	}
	want := []shape{{TableCoil, 0, 2, 2}, {TableHolding, 10, 3, 2}, {TableHolding, 14, 1, 1}, {TableInput, 0, 1, 1}, {TableInput, 124, 2, 1}}
	if len(got) != len(want) {
		t.Fatalf("plan = %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("plan = %+v, want %+v", got, want)
		}
	}
}
