package subject

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MQTT topics and NATS subjects
//
// An MQTT topic is a sequence of levels separated by '/'; a level may be
// empty and may hold any character but NUL (U+0000), '+' and '#' (which
// are wildcards, allowed in topic filters only). A NATS subject's tokens
// are non-empty and hold no '.' and no whitespace. The conversion below is
// the one nats-server's MQTT support applies (v2.15.2), so that subjects,
// permissions and stream filters read the same on leafbox as on a
// nats-server; leafbox extends it only where nats-server refuses the
// topic:
//
//	topic level                 subject token
//	"temp"                      "temp"          (copied)
//	"" (an empty level)         "/"             ("/a" → "/.a", "a//b" → "a./.b", "a/" → "a./")
//	"spBv1.0" ('.' in a level)  "spBv1//0"      ('.' → "//")
//	"+", "#" (filters)          "*", ">"
//	" " \t \r \n \f DEL         "/20" "/09" ... ('/' and two lowercase hex digits; leafbox only:
//	                                             nats-server refuses such topics)
//	"*", ">" as a whole level   "/2a", "/3e"    (leafbox only: nats-server would make them wildcards)
//
// The conversion is reversible: TopicFromSubject(SubjectFromTopic(t)) == t
// for every valid topic. A subject that did not come from a topic may
// hold a '/' that is none of the forms above; as in nats-server, that '/'
// is dropped on the way to MQTT ("a/b" → topic "ab"), so such subjects do
// not round-trip.

// MaxTopicLen is the longest MQTT topic in bytes: its length is a 16-bit
// field on the wire.
const MaxTopicLen = 65535

// ErrTopicEmpty is returned for an empty topic or topic filter.
var ErrTopicEmpty = errors.New("subject: empty MQTT topic")

// TopicError describes why an MQTT topic or topic filter has no subject.
type TopicError struct {
	// Topic is the topic or filter, as given.
	Topic string
	// Reason says what is wrong with it.
	Reason string
}

func (e *TopicError) Error() string {
	return fmt.Sprintf("subject: MQTT topic %q: %s", e.Topic, e.Reason)
}

const (
	topicSep         = '/'
	topicSingleLevel = '+'
	topicMultiLevel  = '#'
	lowerHex         = "0123456789abcdef"
)

// escapedByte reports whether c, anywhere in a topic level, is written
// as '/' and two hex digits: the bytes a subject may not hold, and DEL,
// which nats-server's subject index reserves.
func escapedByte(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == 0x7f
}

// SubjectFromTopic returns the subject of the MQTT topic name topic (as
// PUBLISH carries it: no wildcards).
func SubjectFromTopic(topic string) (string, error) {
	b, err := AppendSubjectFromTopic(nil, topic)
	return string(b), err
}

// AppendSubjectFromTopic appends the subject of the MQTT topic name topic
// to dst. On error dst is returned unchanged.
func AppendSubjectFromTopic(dst []byte, topic string) ([]byte, error) {
	return appendSubject(dst, topic, false)
}

// SubjectFromTopicFilter returns the subscription subject of the MQTT
// topic filter filter ("+" → "*", "#" → ">"). In MQTT, "a/#" also
// matches the parent topic "a", which "a.>" does not: parent is then the
// subject a subscriber needs as well ("a"); it is "" when there is none
// (no trailing "#", or a parent that is no topic, as for "/#" and "#").
func SubjectFromTopicFilter(filter string) (subj, parent string, err error) {
	b, err := appendSubject(nil, filter, true)
	if err != nil {
		return "", "", err
	}
	if n := len(filter); n > 2 && filter[n-1] == topicMultiLevel && filter[n-2] == topicSep {
		// The filter without "/#" is a topic filter of its own.
		p, err := appendSubject(nil, filter[:n-2], true)
		if err == nil {
			parent = string(p)
		}
	}
	return string(b), parent, nil
}

// appendSubject converts a topic name, or a topic filter when filter is
// set, checking the MQTT rules for both.
func appendSubject(dst []byte, topic string, filter bool) ([]byte, error) {
	if topic == "" {
		return dst, ErrTopicEmpty
	}
	if len(topic) > MaxTopicLen {
		return dst, &TopicError{Topic: topic[:64] + "...", Reason: fmt.Sprintf("longer than %d bytes", MaxTopicLen)}
	}
	if !utf8.ValidString(topic) {
		return dst, &TopicError{Topic: topic, Reason: "not valid UTF-8"}
	}
	start := len(dst)
	fail := func(reason string) ([]byte, error) {
		return dst[:start], &TopicError{Topic: topic, Reason: reason}
	}
	levelStart := 0
	for i := 0; i <= len(topic); i++ {
		if i < len(topic) && topic[i] != topicSep {
			continue
		}
		level := topic[levelStart:i]
		if levelStart > 0 {
			dst = append(dst, Sep)
		}
		switch {
		case level == "":
			dst = append(dst, topicSep)
		case len(level) == 1 && (level[0] == topicSingleLevel || level[0] == topicMultiLevel):
			if !filter {
				return fail(fmt.Sprintf("wildcard %q in a topic name", level))
			}
			if level[0] == topicMultiLevel && i != len(topic) {
				return fail("'#' must be the last level")
			}
			if level[0] == topicSingleLevel {
				dst = append(dst, Wildcard...)
			} else {
				dst = append(dst, FullWildcard...)
			}
		case len(level) == 1 && (level[0] == '*' || level[0] == '>'):
			dst = appendEscape(dst, level[0])
		default:
			for j := 0; j < len(level); j++ {
				switch c := level[j]; {
				case c == 0:
					return fail("NUL character")
				case (c == topicSingleLevel || c == topicMultiLevel) && !filter:
					return fail(fmt.Sprintf("wildcard %q in a topic name", c))
				case c == topicSingleLevel || c == topicMultiLevel:
					return fail(fmt.Sprintf("wildcard %q must be a whole level", c))
				case c == Sep:
					dst = append(dst, topicSep, topicSep)
				case escapedByte(c):
					dst = appendEscape(dst, c)
				default:
					dst = append(dst, c)
				}
			}
		}
		levelStart = i + 1
	}
	return dst, nil
}

func appendEscape(dst []byte, c byte) []byte {
	return append(dst, topicSep, lowerHex[c>>4], lowerHex[c&0xf])
}

// TopicFromSubject returns the MQTT topic of a published subject.
func TopicFromSubject(subj string) string {
	return string(AppendTopicFromSubject(nil, subj))
}

// AppendTopicFromSubject appends the MQTT topic of the published subject
// subj to dst. It reverses SubjectFromTopic; a '/' in subj that is none
// of its forms is dropped, as nats-server does.
func AppendTopicFromSubject(dst []byte, subj string) []byte {
	for i := 0; i < len(subj); i++ {
		c := subj[i]
		switch {
		case c == Sep:
			dst = append(dst, topicSep)
		case c != topicSep:
			dst = append(dst, c)
		case i+1 == len(subj):
			// A trailing '/' ends an empty last level ("a./").
		case subj[i+1] == Sep:
			// "/." : an empty level before the separator.
			dst = append(dst, topicSep)
			i++
		case subj[i+1] == topicSep:
			dst = append(dst, Sep)
			i++
		default:
			if e, ok := unescape(subj[i+1:]); ok {
				dst = append(dst, e)
				i += 2
			}
			// Else a foreign '/': dropped.
		}
	}
	return dst
}

// unescape decodes the two hex digits at the start of s when they name a
// byte that SubjectFromTopic escapes.
func unescape(s string) (byte, bool) {
	if len(s) < 2 {
		return 0, false
	}
	hi, lo := hexValue(s[0]), hexValue(s[1])
	if hi < 0 || lo < 0 {
		return 0, false
	}
	c := byte(hi<<4 | lo)
	if escapedByte(c) || c == '*' || c == '>' {
		return c, true
	}
	return 0, false
}

func hexValue(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return -1
}

// MatchTopic reports whether the MQTT topic name matches the (valid) MQTT
// topic filter (MQTT 5 §4.7): '+' matches one level, a trailing '#' the
// parent level and every level below it, and a filter starting with a
// wildcard matches no topic starting with '$' [MQTT-4.7.2-1]. It walks
// both strings once and allocates nothing.
func MatchTopic(filter, topic string) bool {
	if topic != "" && topic[0] == '$' && filter != "" && (filter[0] == '+' || filter[0] == '#') {
		return false
	}
	for {
		fl, frest, fmore := strings.Cut(filter, "/")
		if fl == "#" {
			return true
		}
		tl, trest, tmore := strings.Cut(topic, "/")
		if fl != "+" && fl != tl {
			return false
		}
		switch {
		case !fmore && !tmore:
			return true
		case !tmore:
			// "a/#" matches "a": only a '#' may follow.
			return frest == "#"
		case !fmore:
			return false
		}
		filter, topic = frest, trest
	}
}
