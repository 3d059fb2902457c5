package subject

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzTopicRoundTrip: every valid topic name maps to a valid publish
// subject that maps back to the same topic, and a topic that maps to a
// filter subject of its own levels is matched by it.
func FuzzTopicRoundTrip(f *testing.F) {
	for _, c := range topicCases {
		f.Add(c.topic)
	}
	for _, s := range []string{"a/+", "#", "\x00", "a/b/", "//a//", "a..b", " ", "/20", "a/2a", "x/*/>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, topic string) {
		subj, err := SubjectFromTopic(topic)
		valid := topic != "" && len(topic) <= MaxTopicLen && utf8.ValidString(topic) &&
			!strings.ContainsAny(topic, "+#\x00")
		if (err == nil) != valid {
			t.Fatalf("SubjectFromTopic(%q) error = %v; topic valid: %v", topic, err, valid)
		}
		if err != nil {
			return
		}
		if !ValidLiteral(subj) {
			t.Fatalf("SubjectFromTopic(%q) = %q: not a valid literal subject", topic, subj)
		}
		if back := TopicFromSubject(subj); back != topic {
			t.Fatalf("TopicFromSubject(SubjectFromTopic(%q) = %q) = %q", topic, subj, back)
		}
		// The topic as a filter matches itself.
		filter, _, err := SubjectFromTopicFilter(topic)
		if err != nil || !Match(filter, subj) {
			t.Fatalf("filter %q of topic %q: %v, matches its subject %q: %v", filter, topic, err, subj, Match(filter, subj))
		}
	})
}

// FuzzSubjectToTopic: any published subject maps to a topic without
// wildcards or NUL, and a subject that came from a topic maps back.
func FuzzSubjectToTopic(f *testing.F) {
	for _, c := range topicCases {
		f.Add(c.subject)
	}
	for _, s := range []string{"a/b", "a/", "/", "//", "/.", "x/zz", "x/2", "x/2a", "orders.>", "a.*.b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, subj string) {
		if !ValidPublish(subj) {
			return
		}
		topic := TopicFromSubject(subj)
		again, err := SubjectFromTopic(topic)
		if topic == "" || strings.ContainsAny(topic, "\x00") {
			if err == nil {
				t.Fatalf("TopicFromSubject(%q) = %q accepted", subj, topic)
			}
			return
		}
		if err != nil {
			// Only '+' or '#' in the subject, or bytes that are not UTF-8, make no topic.
			if !strings.ContainsAny(subj, "+#") && utf8.ValidString(subj) {
				t.Fatalf("TopicFromSubject(%q) = %q, which has no subject: %v", subj, topic, err)
			}
			return
		}
		// The subject of that topic is canonical: it maps to the same topic.
		if back := TopicFromSubject(again); back != topic {
			t.Fatalf("subject %q → topic %q → subject %q → topic %q", subj, topic, again, back)
		}
	})
}
