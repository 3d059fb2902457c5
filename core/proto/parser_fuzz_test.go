package proto

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// fuzzSets are the OpSets FuzzParse chooses from; the last mixes every
// operation, so HMSG takes the leaf form.
var fuzzSets = []OpSet{ClientOps, ServerOps, LeafOps, OpSetOf(OpInfo, OpConnect, OpPub, OpSub, OpUnsub, OpMsg,
	OpPing, OpPong, OpOK, OpErr, OpLeafSub, OpLeafUnsub, OpLeafMsg)}

// fuzzConfig maps the fuzzer's mode byte to an OpSet and limits. Odd
// multiples of len(fuzzSets) select small limits, which the fuzzer can
// reach with short inputs.
func fuzzConfig(mode uint8) (OpSet, Limits) {
	set := fuzzSets[int(mode)%len(fuzzSets)]
	if (int(mode)/len(fuzzSets))%2 == 1 {
		return set, Limits{MaxControlLine: 24, MaxPayload: 40}
	}
	return set, Limits{}
}

// FuzzParse requires that a stream gives the same operations and error
// whether it is parsed whole, cut in two at a fuzzer-chosen point, or fed
// one byte at a time, and that the parser never panics.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, split uint16, mode uint8) {
		set, lim := fuzzConfig(mode)
		want, wantErr := feed(t, NewParser(set, lim), data)

		k := int(split) % (len(data) + 1)
		got, err := feed(t, NewParser(set, lim), data[:k], data[k:])
		if err != wantErr || !reflect.DeepEqual(got, want) {
			t.Fatalf("split at %d:\n got %+v, %v\nwant %+v, %v", k, got, err, want, wantErr)
		}

		if len(data) <= 512 {
			chunks := make([][]byte, len(data))
			for i := range data {
				chunks[i] = data[i : i+1]
			}
			got, err = feed(t, NewParser(set, lim), chunks...)
			if err != wantErr || !reflect.DeepEqual(got, want) {
				t.Fatalf("byte at a time:\n got %+v, %v\nwant %+v, %v", got, err, want, wantErr)
			}
		}
	})
}

var updateCorpus = flag.Bool("update-corpus", false, "rewrite the FuzzParse seed corpus from the fixtures")

// TestFuzzCorpus keeps testdata/fuzz/FuzzParse in step with the fixture
// catalogue: one seed per fixture, cut in the middle. Run with
// -update-corpus after changing fixtures.
func TestFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	if *updateCorpus {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, fx := range fixtures {
		mode := -1
		for i, s := range fuzzSets {
			if s == fx.set {
				mode = i
			}
		}
		if mode < 0 {
			t.Fatalf("%s: OpSet not in fuzzSets", fx.name)
		}
		if fx.lim != (Limits{}) {
			mode += len(fuzzSets) // small limits
		}
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\nuint16(%d)\nuint8(%d)\n", fx.in, len(fx.in)/2, mode)
		path := filepath.Join(dir, "fixture-"+fx.name)
		if *updateCorpus {
			if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(path)
		if err != nil || string(have) != content {
			t.Errorf("%s is missing or stale; run go test -run TestFuzzCorpus -update-corpus", path)
		}
	}
}
