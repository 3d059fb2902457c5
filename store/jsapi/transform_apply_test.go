package jsapi

import (
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/subject"
)

func TestTransformApply(t *testing.T) {
	cases := []struct{ src, dest, subj, want string }{
		{"", ">", "a.b", "a.b"},
		{"a.*.*", "b.$2.$1", "a.x.y", "b.y.x"},
		{"a.*.*", "b.{{wildcard(2)}}.{{ Wildcard(1) }}", "a.x.y", "b.y.x"},
		{"a.>", "b.>", "a.x.y.z", "b.x.y.z"},
		{"a.>", ">", "a.x.y", "x.y"},
		{"a.*.>", "{{wildcard(1)}}.>", "a.x.y.z", "x.y.z"},
		{"a.*", "p.{{partition(10,1)}}.$1", "a.key", "p.8.key"},
		{"a.b", "p.{{partition(4)}}", "a.b", "p.0"},
		{"a.*", "x.{{splitFromLeft(1,2)}}", "a.abcdef", "x.ab.cdef"},
		{"a.*", "x.{{splitFromRight(1,2)}}", "a.abcdef", "x.abcd.ef"},
		{"a.*", "x.{{splitFromLeft(1,9)}}", "a.abc", "x.abc"},
		{"a.*", "x.{{sliceFromLeft(1,2)}}", "a.abcde", "x.ab.cd.e"},
		{"a.*", "x.{{sliceFromRight(1,2)}}", "a.abcde", "x.a.bc.de"},
		{"a.*", "x.{{sliceFromRight(1,2)}}", "a.abcd", "x.ab.cd"},
		{"a.*", "x.{{left(1,2)}}", "a.abcde", "x.ab"},
		{"a.*", "x.{{right(1,2)}}", "a.abcde", "x.de"},
		{"a.*", "x.{{split(1,-)}}", "a.-ab--cd-", "x.ab.cd"},
		{"a.*", "x.{{split(1,-)}}", "a.--ab", "x..ab"},
		{"a.*", "x.{{random(1)}}", "a.q", "x.0"},
	}
	for _, c := range cases {
		tr, err := CompileTransform(c.src, c.dest)
		if err != nil {
			t.Fatalf("%s -> %s: %v", c.src, c.dest, err)
		}
		got, ok := tr.Append(nil, c.subj)
		if !ok || string(got) != c.want {
			t.Errorf("%s -> %s on %s: %q %v, want %q", c.src, c.dest, c.subj, got, ok, c.want)
		}
	}
	tr, _ := CompileTransform("a.*", "b.$1")
	if got, ok := tr.Append([]byte("keep"), "c.d"); ok || string(got) != "keep" {
		t.Errorf("non-matching subject transformed: %q %v", got, ok)
	}
	if _, err := CompileTransform("a.*", "b.$2"); err == nil || !strings.Contains(err.Error(), "wildcard index out of range") {
		t.Errorf("out of range index: %v", err)
	}
	if tr, err := CompileTransform("a", ""); tr != nil || err != nil {
		t.Errorf("empty dest: %v %v", tr, err)
	}
}

// TestTransformPartitionHash pins the partition hash: FNV-1a 32 of the
// concatenated tokens, as nats-server.
func TestTransformPartitionHash(t *testing.T) {
	tr, err := CompileTransform("*.*", "{{partition(1000,1,2)}}")
	if err != nil {
		t.Fatal(err)
	}
	// FNV-1a("ab") = 0x4d2505ca = 1294271946.
	if got, _ := tr.Append(nil, "a.b"); string(got) != "946" {
		t.Errorf("partition = %s, want 946", got)
	}
}

func TestTransformAllocs(t *testing.T) {
	tr, err := CompileTransform("a.*.*.>", "p.{{partition(8,1,2)}}.{{split(1,-)}}.{{sliceFromLeft(2,2)}}.{{right(1,1)}}.$2.>")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 256)
	n := testing.AllocsPerRun(200, func() {
		buf, _ = tr.Append(buf[:0], "a.x-y-z.abcdef.rest.of.it")
	})
	if n != 0 {
		t.Errorf("Append allocates %.1f times per call", n)
	}
}

// FuzzTransform compiles arbitrary source/destination pairs: compilation
// agrees with the config check, and applying a compiled transform to a
// matching subject never panics and yields a subject only from the tokens
// given.
func FuzzTransform(f *testing.F) {
	for _, s := range [][3]string{
		{"a.*.*", "b.$2.$1", "a.x.y"},
		{"a.>", "b.{{wildcard(1)}}.>", "a.x.y"},
		{"*.*", "{{partition(3,1,2)}}.{{split(2,_)}}", "k.a_b"},
		{"a.*", "{{sliceFromRight(1,3)}}.{{splitFromLeft(1,1)}}.{{left(1,0)}}", "a.abcdefg"},
		{"a.*", "{{split(1,)}}", "a.héllo"},
		{"a.*", "{{random(0)}}.{{unknown(1)}}", "a.b"},
		{">", ">", "x"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, src, dest, subj string) {
		tr, err := CompileTransform(src, dest)
		verr := checkTransform(src, dest)
		if (err == nil) != (verr == nil) {
			t.Fatalf("compile %v, check %v", err, verr)
		}
		if tr == nil {
			return
		}
		if !subject.ValidLiteral(subj) {
			return
		}
		out, ok := tr.Append([]byte("pre:"), subj)
		if ok != subject.Match(tr.Source(), subj) {
			t.Fatalf("%q -> %q on %q: matched %v", src, dest, subj, ok)
		}
		if !strings.HasPrefix(string(out), "pre:") || (!ok && string(out) != "pre:") {
			t.Fatalf("%q -> %q on %q: dst clobbered: %q", src, dest, subj, out)
		}
		if again, _ := tr.Append([]byte("pre:"), subj); !strings.Contains(dest, "andom") && string(again) != string(out) {
			t.Fatalf("%q -> %q on %q: %q then %q", src, dest, subj, out, again)
		}
	})
}
