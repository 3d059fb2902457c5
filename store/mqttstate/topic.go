package mqttstate

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxTopic is the longest topic or filter MQTT can carry.
const maxTopic = 65535

// ValidTopic reports why topic cannot name a published message: empty,
// over 65535 bytes, not UTF-8, holding NUL, '+' or '#'.
func ValidTopic(topic string) error {
	switch {
	case topic == "":
		return fmt.Errorf("%w: empty", ErrInvalidTopic)
	case len(topic) > maxTopic:
		return fmt.Errorf("%w: %d bytes", ErrInvalidTopic, len(topic))
	case !utf8.ValidString(topic):
		return fmt.Errorf("%w: not UTF-8", ErrInvalidTopic)
	case strings.ContainsAny(topic, "+#\x00"):
		return fmt.Errorf("%w: %q holds a wildcard or NUL", ErrInvalidTopic, topic)
	}
	return nil
}

// ValidFilter reports why filter is not an MQTT topic filter: empty, over
// 65535 bytes, not UTF-8, holding NUL, a '+' that is not a whole level, or
// a '#' that is not the whole last level.
func ValidFilter(filter string) error {
	switch {
	case filter == "":
		return fmt.Errorf("%w: empty", ErrInvalidFilter)
	case len(filter) > maxTopic:
		return fmt.Errorf("%w: %d bytes", ErrInvalidFilter, len(filter))
	case !utf8.ValidString(filter):
		return fmt.Errorf("%w: not UTF-8", ErrInvalidFilter)
	case strings.IndexByte(filter, 0) >= 0:
		return fmt.Errorf("%w: holds NUL", ErrInvalidFilter)
	}
	rest := filter
	for {
		level, tail, more := strings.Cut(rest, "/")
		if strings.ContainsAny(level, "+#") && len(level) > 1 {
			return fmt.Errorf("%w: %q: a wildcard must be a whole level", ErrInvalidFilter, filter)
		}
		if level == "#" && more {
			return fmt.Errorf("%w: %q: '#' must be the last level", ErrInvalidFilter, filter)
		}
		if !more {
			return nil
		}
		rest = tail
	}
}
