package subject

import (
	"errors"
	"strings"
	"testing"
)

// topicCases are topics with the subjects nats-server v2.15.2 gives them
// (TestTopicMappingMatchesNATSServer checks this list against a real one),
// then leafbox's extensions, marked.
var topicCases = []struct {
	topic, subject string
	leafboxOnly    bool // nats-server refuses the topic or makes it a wildcard
}{
	{"temp", "temp", false},
	{"sensors/floor3/temp", "sensors.floor3.temp", false},
	{"/a", "/.a", false},
	{"a/", "a./", false},
	{"/", "/./", false},
	{"//", "/././", false},
	{"a//b", "a./.b", false},
	{"a///b", "a././.b", false},
	{"spBv1.0/plant1/NDATA/edge1", "spBv1//0.plant1.NDATA.edge1", false},
	{".", "//", false},
	{"a./b", "a//.b", false},
	{"..", "////", false},
	{"$SYS/broker/uptime", "$SYS.broker.uptime", false},
	{"a*b/c>d", "a*b.c>d", false},
	{"ünïcode/温度", "ünïcode.温度", false},
	{"a b", "a/20b", true},
	{"tab\there", "tab/09here", true},
	{"line\nbreak/x", "line/0abreak.x", true},
	{"del\x7f", "del/7f", true},
	{"a/*", "a./2a", true},
	{">/b", "/3e.b", true},
	{"a/ /b", "a./20.b", true},
}

func TestSubjectFromTopic(t *testing.T) {
	for _, c := range topicCases {
		got, err := SubjectFromTopic(c.topic)
		if err != nil || got != c.subject {
			t.Errorf("SubjectFromTopic(%q) = %q, %v; want %q", c.topic, got, err, c.subject)
			continue
		}
		if !ValidLiteral(got) {
			t.Errorf("SubjectFromTopic(%q) = %q, not a valid publish subject", c.topic, got)
		}
		if back := TopicFromSubject(got); back != c.topic {
			t.Errorf("TopicFromSubject(%q) = %q; want %q", got, back, c.topic)
		}
	}
}

func TestSubjectFromTopicErrors(t *testing.T) {
	for _, c := range []struct{ topic, want string }{
		{"a/+", "wildcard \"+\" in a topic name"},
		{"#", "wildcard \"#\" in a topic name"},
		{"a+b", "wildcard '+' in a topic name"},
		{"a\x00b", "NUL character"},
		{"bad\xffutf8", "not valid UTF-8"},
		{strings.Repeat("x", MaxTopicLen+1), "longer than 65535 bytes"},
	} {
		dst := []byte("keep")
		got, err := AppendSubjectFromTopic(dst, c.topic)
		var te *TopicError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SubjectFromTopic(%.20q) error = %v; want one containing %q", c.topic, err, c.want)
		}
		if string(got) != "keep" {
			t.Errorf("SubjectFromTopic(%.20q) changed dst to %q on error", c.topic, got)
		}
	}
	if _, err := SubjectFromTopic(""); !errors.Is(err, ErrTopicEmpty) {
		t.Errorf("SubjectFromTopic(\"\") error = %v; want ErrTopicEmpty", err)
	}
}

func TestSubjectFromTopicFilter(t *testing.T) {
	for _, c := range []struct{ filter, subject, parent string }{
		{"sensors/+/temp", "sensors.*.temp", ""},
		{"sensors/#", "sensors.>", "sensors"},
		{"#", ">", ""},
		{"+", "*", ""},
		{"/#", "/.>", ""},
		{"+/#", "*.>", "*"},
		{"a//#", "a./.>", "a./"},
		{"spBv1.0/+/NDATA/#", "spBv1//0.*.NDATA.>", "spBv1//0.*.NDATA"},
		{"a/b", "a.b", ""},
	} {
		subj, parent, err := SubjectFromTopicFilter(c.filter)
		if err != nil || subj != c.subject || parent != c.parent {
			t.Errorf("SubjectFromTopicFilter(%q) = %q, %q, %v; want %q, %q", c.filter, subj, parent, err, c.subject, c.parent)
			continue
		}
		if !Valid(subj) {
			t.Errorf("SubjectFromTopicFilter(%q) = %q, not a valid subscription subject", c.filter, subj)
		}
	}
	for _, c := range []struct{ filter, want string }{
		{"a/#/b", "'#' must be the last level"},
		{"a/b#", "wildcard '#' must be a whole level"},
		{"a+/b", "wildcard '+' must be a whole level"},
		{"", "empty MQTT topic"},
	} {
		if _, _, err := SubjectFromTopicFilter(c.filter); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("SubjectFromTopicFilter(%q) error = %v; want one containing %q", c.filter, err, c.want)
		}
	}
}

// A filter's subject matches exactly the subjects of the topics the
// filter matches in MQTT, with the parent subject covering "a/#" → "a".
func TestTopicFilterMatchesLikeMQTT(t *testing.T) {
	topics := []string{"a", "a/b", "a/b/c", "a/", "/a", "/", "a//b", "b/a", "a.b/c", "a b/c"}
	for _, c := range []struct {
		filter string
		match  []string
	}{
		{"a/#", []string{"a", "a/b", "a/b/c", "a/", "a//b"}},
		{"a/+", []string{"a/b", "a/"}},
		{"+/a", []string{"/a", "b/a"}},
		{"+/+", []string{"a/b", "a/", "/a", "/", "b/a", "a.b/c", "a b/c"}},
		{"#", topics},
		{"a.b/#", []string{"a.b/c"}},
		{"a b/+", []string{"a b/c"}},
	} {
		subj, parent, err := SubjectFromTopicFilter(c.filter)
		if err != nil {
			t.Fatalf("SubjectFromTopicFilter(%q): %v", c.filter, err)
		}
		want := map[string]bool{}
		for _, m := range c.match {
			want[m] = true
		}
		for _, topic := range topics {
			s, err := SubjectFromTopic(topic)
			if err != nil {
				t.Fatalf("SubjectFromTopic(%q): %v", topic, err)
			}
			got := Match(subj, s) || (parent != "" && Match(parent, s))
			if got != want[topic] {
				t.Errorf("filter %q (subjects %q, %q) matches topic %q (subject %q): %v; MQTT says %v",
					c.filter, subj, parent, topic, s, got, want[topic])
			}
		}
	}
}

// Subjects that did not come from a topic: a '/' that is none of the
// mapping's forms is dropped, as nats-server does.
func TestTopicFromForeignSubject(t *testing.T) {
	for _, c := range []struct{ subject, topic string }{
		{"a/b", "ab"},
		{"a/", "a"},
		{"a/.b", "a/b"},
		{"x/zz", "xzz"},
		{"x/41", "x41"}, // hex, but no byte the mapping escapes
		{"orders.>", "orders/>"},
	} {
		if got := TopicFromSubject(c.subject); got != c.topic {
			t.Errorf("TopicFromSubject(%q) = %q; want %q", c.subject, got, c.topic)
		}
	}
}

func TestTopicMappingNoAlloc(t *testing.T) {
	dst := make([]byte, 0, 128)
	topic := "spBv1.0/plant1//NDATA/edge 1"
	subj := "spBv1//0.plant1./.NDATA.edge/201"
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = AppendSubjectFromTopic(dst[:0], topic); err != nil {
			t.Fatal(err)
		}
		dst = AppendTopicFromSubject(dst[:0], subj)
	})
	if allocs != 0 {
		t.Errorf("topic ⇄ subject into a sized buffer: %v allocations; want 0", allocs)
	}
}
