package subject

import "testing"

func TestValid(t *testing.T) {
	cases := []struct {
		s              string
		valid, literal bool
	}{
		{"foo", true, true},
		{"foo.bar", true, true},
		{"foo.*", true, false},
		{"foo.>", true, false},
		{">", true, false},
		{"*", true, false},
		{"foo.>.bar", false, false},
		{"a*b.c>", true, true},
		{"", false, false},
		{".foo", false, false},
		{"foo.", false, false},
		{"foo..bar", false, false},
		{"foo bar", false, false},
		{"foo\tbar", false, false},
		{"foo\r\n", false, false},
		{"$JS.API.INFO", true, true},
	}
	for _, tc := range cases {
		if got := Valid(tc.s); got != tc.valid {
			t.Errorf("Valid(%q) = %v, want %v", tc.s, got, tc.valid)
		}
		if got := ValidLiteral(tc.s); got != tc.literal {
			t.Errorf("ValidLiteral(%q) = %v, want %v", tc.s, got, tc.literal)
		}
		if got := ValidBytes([]byte(tc.s)); got != tc.valid {
			t.Errorf("ValidBytes(%q) = %v, want %v", tc.s, got, tc.valid)
		}
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		pattern, subject string
		want             bool
	}{
		{"foo", "foo", true},
		{"foo", "bar", false},
		{"foo.*", "foo.bar", true},
		{"foo.*", "foo", false},
		{"foo.*", "foo.bar.baz", false},
		{"foo.>", "foo.bar.baz", true},
		{"foo.>", "foo", false},
		{">", "a", true},
		{">", "a.b.c", true},
		{"*.b.*", "a.b.c", true},
		{"*.b.*", "a.c.c", false},
		{"a.b", "a.b.c", false},
		{"a.b.c", "a.b", false},
	}
	for _, tc := range cases {
		if got := Match(tc.pattern, tc.subject); got != tc.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tc.pattern, tc.subject, got, tc.want)
		}
	}
}

func TestSubsetOverlap(t *testing.T) {
	if !Subset("foo.bar", "foo.*") || !Subset("foo.*", "foo.>") || Subset("foo.>", "foo.*") || !Subset("a.b", "a.b") || Subset("*", "a") {
		t.Fatal("Subset mismatch")
	}
	if !Overlap("foo.*", "*.bar") || Overlap("foo.a", "foo.b") || !Overlap("foo.>", "foo.a.b") || Overlap("a.b", "a.b.c") {
		t.Fatal("Overlap mismatch")
	}
}

func TestTokens(t *testing.T) {
	if NumTokens("a.b.c") != 3 || NumTokens("") != 0 || Token("a.b.c", 1) != "b" || Token("a.b", 5) != "" {
		t.Fatal("token helpers")
	}
	if IsLiteral("a.*") || IsLiteral(">") || !IsLiteral("a*.b>") {
		t.Fatal("IsLiteral")
	}
}

func TestValidQueue(t *testing.T) {
	if !ValidQueue("workers") || ValidQueue("") || ValidQueue("a b") {
		t.Fatal("ValidQueue")
	}
}

func TestValidBytesNoAlloc(t *testing.T) {
	b := []byte("foo.bar.baz")
	if n := testing.AllocsPerRun(100, func() { ValidLiteralBytes(b) }); n != 0 {
		t.Fatalf("ValidLiteralBytes allocates %v", n)
	}
}
