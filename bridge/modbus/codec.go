package modbus

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Value is a decoded register value.
type Value struct {
	// Raw is the value as the device holds it: a bool, an integer, or a
	// float32 widened to float64.
	Raw any
	// Number is Raw*Scale+Offset for numbers; Bool is the value of a
	// bool register.
	Number float64
	Bool   bool
}

// decode turns a register's words (big-endian 16-bit registers as the
// protocol carries them, MODBUS Application Protocol 1.1b3 §4.2) into its
// value. words holds exactly r.words() entries.
func decode(r Register, words []uint16) Value {
	var u uint32
	if r.words() == 2 {
		hi, lo := words[0], words[1]
		if r.LowWordFirst {
			hi, lo = lo, hi
		}
		u = uint32(hi)<<16 | uint32(lo)
	} else {
		u = uint32(words[0])
	}
	var raw float64
	var v Value
	switch r.Type {
	case TypeInt16:
		raw, v.Raw = float64(int16(u)), int64(int16(u))
	case TypeUint32:
		raw, v.Raw = float64(u), int64(u)
	case TypeInt32:
		raw, v.Raw = float64(int32(u)), int64(int32(u))
	case TypeFloat32:
		f := math.Float32frombits(u)
		raw, v.Raw = float64(f), float64(f)
	default:
		raw, v.Raw = float64(u), int64(u)
	}
	v.Number = raw
	if r.scale() != 1 || r.Offset != 0 {
		v.Number = tidy(scaled(raw, r.scale()) + r.Offset)
	}
	return v
}

// tidy rounds a scaled value to 12 significant digits, dropping the
// binary noise of the arithmetic (65.43 - 40 is 25.430000000000007);
// register values carry at most 10.
func tidy(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return f
	}
	t, err := strconv.ParseFloat(strconv.FormatFloat(f, 'g', 12, 64), 64)
	if err != nil {
		return f
	}
	return t
}

// scaled is raw*scale, computed as raw/n when scale is 1/n for a whole n
// (0.1, 0.01), so that 224 at scale 0.1 is 22.4, not 22.400000000000002.
func scaled(raw, scale float64) float64 {
	if inv := 1 / scale; inv > 1 && math.Abs(inv-math.Round(inv)) < 1e-9 {
		return raw / math.Round(inv)
	}
	return raw * scale
}

// errRange is a write value the register cannot hold.
var errRange = errors.New("modbus: value out of range for the register")

// encode turns a published-scale value into the register's words, the
// inverse of decode: raw = (value-Offset)/Scale, rounded to the nearest
// integer for integer types.
func encode(r Register, value float64) ([]uint16, error) {
	if math.IsNaN(value) || math.IsInf(value, 0) {
		return nil, fmt.Errorf("%w: %v", errRange, value)
	}
	raw := unscaled(value-r.Offset, r.scale())
	var u uint32
	switch r.Type {
	case TypeFloat32:
		if math.Abs(raw) > math.MaxFloat32 {
			return nil, fmt.Errorf("%w: %v", errRange, value)
		}
		u = math.Float32bits(float32(raw))
	default:
		lo, hi := intRange(r.Type)
		n := math.Round(raw)
		if n < lo || n > hi {
			return nil, fmt.Errorf("%w: %v is %v raw, outside %v..%v", errRange, value, n, lo, hi)
		}
		u = uint32(int64(n))
	}
	if r.words() == 1 {
		return []uint16{uint16(u)}, nil
	}
	hi, lo := uint16(u>>16), uint16(u)
	if r.LowWordFirst {
		return []uint16{lo, hi}, nil
	}
	return []uint16{hi, lo}, nil
}

// unscaled is the inverse of scaled.
func unscaled(v, scale float64) float64 {
	if inv := 1 / scale; inv > 1 && math.Abs(inv-math.Round(inv)) < 1e-9 {
		return v * math.Round(inv)
	}
	return v / scale
}

func intRange(typ string) (float64, float64) {
	switch typ {
	case TypeInt16:
		return math.MinInt16, math.MaxInt16
	case TypeUint32:
		return 0, math.MaxUint32
	case TypeInt32:
		return math.MinInt32, math.MaxInt32
	}
	return 0, math.MaxUint16
}

// changed says whether v differs from last by more than the register's
// deadband (any change when the deadband is 0).
func changed(r Register, last, v Value) bool {
	if r.Type == TypeBool {
		return last.Bool != v.Bool
	}
	d := math.Abs(v.Number - last.Number)
	if r.Deadband == 0 {
		return v.Number != last.Number && !(math.IsNaN(v.Number) && math.IsNaN(last.Number))
	}
	return d > r.Deadband || math.IsNaN(d)
}

// appendValue appends v as published: JSON {"value":..,"raw":..,"ts":..}
// or plain text. ts is RFC 3339 with milliseconds, UTC.
func appendValue(dst []byte, r Register, v Value, ts string, plain bool) []byte {
	var value []byte
	switch {
	case r.Type == TypeBool:
		value = strconv.AppendBool(nil, v.Bool)
	case r.Type == TypeFloat32 && r.scale() == 1 && r.Offset == 0:
		value = appendNumber(nil, v.Number, 32)
	default:
		value = appendNumber(nil, v.Number, 64)
	}
	if plain {
		return append(dst, value...)
	}
	dst = append(dst, `{"value":`...)
	dst = append(dst, value...)
	dst = append(dst, `,"raw":`...)
	switch raw := v.Raw.(type) {
	case bool:
		dst = strconv.AppendBool(dst, raw)
	case int64:
		dst = strconv.AppendInt(dst, raw, 10)
	case float64:
		dst = appendNumber(dst, raw, 32)
	}
	dst = append(dst, `,"ts":"`...)
	dst = append(dst, ts...)
	return append(dst, `"}`...)
}

// appendNumber appends f as a JSON number; NaN and infinities, which
// JSON cannot carry, become null.
func appendNumber(dst []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	return strconv.AppendFloat(dst, f, 'g', -1, bits)
}
