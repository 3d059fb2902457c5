package jsapi

import (
	"encoding/json"
	"math/big"
)

// Headers of counter streams (allow_msg_counter).
const (
	// HeaderIncr is the signed decimal integer a publish adds to its
	// subject's counter. A counter stream refuses publishes without it;
	// other streams refuse it (10168). The stored message keeps it.
	HeaderIncr = "Nats-Incr"
	// HeaderCounterSources is the JSON object (stream -> subject ->
	// value) a counter stream keeps on each message to remember the last
	// value every source contributed: CounterSources.
	HeaderCounterSources = "Nats-Counter-Sources"
)

// CounterValue is the body of a counter stream's message: the subject's
// total after the increment, as a decimal string ({"val":"42"}).
type CounterValue struct {
	// Value is the total, a decimal integer of any size.
	Value string `json:"val"`
}

// CounterSources is the value of HeaderCounterSources: for each source
// (by the name in its Nats-Stream-Source header), for each origin
// subject, the origin's last total as a decimal string.
type CounterSources map[string]map[string]string

// ParseIncr parses a Nats-Incr value as nats-server does: an absent or
// empty value is no increment (nil, true); otherwise a base-10 integer
// with an optional sign, of any size, or (nil, false).
func ParseIncr(v []byte) (*big.Int, bool) {
	if len(v) == 0 {
		return nil, true
	}
	n, ok := new(big.Int).SetString(string(v), 10)
	return n, ok
}

// AppendCounterBody appends the body of a counter message holding val
// ({"val":"<val>"}, as json.Marshal of CounterValue writes it).
func AppendCounterBody(dst []byte, val *big.Int) []byte {
	dst = append(dst, `{"val":"`...)
	dst = val.Append(dst, 10)
	return append(dst, `"}`...)
}

// ParseCounterBody reads the total of a counter message body. A body
// that is not a CounterValue object reports false; a value that is not
// an integer counts as 0, as in nats-server.
func ParseCounterBody(b []byte) (*big.Int, bool) {
	var cv CounterValue
	if json.Unmarshal(b, &cv) != nil {
		return nil, false
	}
	n, ok := new(big.Int).SetString(cv.Value, 10)
	if !ok {
		n = new(big.Int)
	}
	return n, true
}
