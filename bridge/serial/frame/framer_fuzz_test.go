package frame

import "testing"

// Each fuzz target checks, for any input: no panic; the same events
// whether the bytes come at once, in two parts or one by one; and a
// message Encode accepts decodes back to itself. Seeds are in
// testdata/fuzz/<target>/.

func FuzzLines(f *testing.F) {
	f.Add([]byte("a\r\nbb\n\n"), 2, []byte("msg"))
	f.Fuzz(func(t *testing.T, in []byte, cut int, msg []byte) {
		checkSplit(t, func() Framer { return NewLines(8, false) }, in, cut)
		checkRoundTrip(t, NewLines(8, cut%2 == 0), msg)
	})
}

func FuzzJSONLines(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{bad\n"), 3, []byte(`[1,"x"]`))
	f.Fuzz(func(t *testing.T, in []byte, cut int, msg []byte) {
		checkSplit(t, func() Framer { return NewJSONLines(32, false) }, in, cut)
		checkRoundTrip(t, NewJSONLines(32, true), msg)
	})
}

func FuzzNMEA(f *testing.F) {
	f.Add([]byte(ggaSentence+"\r\n"+rmcSentence+"\r\n"), 30, []byte("PMTK220,1000"))
	f.Fuzz(func(t *testing.T, in []byte, cut int, msg []byte) {
		checkSplit(t, func() Framer { return NewNMEA(0, false) }, in, cut)
		f := NewNMEA(0, cut%2 == 0)
		enc, err := f.Encode(nil, msg)
		if err != nil {
			return
		}
		evs := collect(f, enc)
		if len(evs) != 1 || evs[0].err != nil || evs[0].data != string(enc[:len(enc)-2]) {
			t.Fatalf("sentence %q encoded as %q came back as %v", msg, enc, evs)
		}
	})
}

func FuzzLengthPrefixed(f *testing.F) {
	f.Add([]byte("\x00\x02ab\x00\x00"), 1, []byte("payload"), uint8(2))
	f.Fuzz(func(t *testing.T, in []byte, cut int, msg []byte, shape uint8) {
		size := []int{1, 2, 4}[int(shape)%3]
		little := shape&4 != 0
		checkSplit(t, func() Framer { l, _ := NewLengthPrefixed(size, little, 64); return l }, in, cut)
		l, _ := NewLengthPrefixed(size, little, 64)
		checkRoundTrip(t, l, msg)
	})
}

func FuzzDelimited(f *testing.F) {
	f.Add([]byte("\x7eab\x7d\x5e\x7e\x7d\x7e"), 3, []byte("a\x7e\x7db"))
	f.Fuzz(func(t *testing.T, in []byte, cut int, msg []byte) {
		checkSplit(t, func() Framer { d, _ := NewDelimited(0x7e, 0x7d, 16); return d }, in, cut)
		d, _ := NewDelimited(0x7e, 0x7d, 16)
		checkRoundTrip(t, d, msg)
	})
}
