package mqtt

import (
	"errors"
	"strings"
)

// sharePrefix starts a shared subscription's filter (MQTT 5 §4.8.2).
const sharePrefix = "$share/"

// MatchTopic reports whether the MQTT topic name matches the topic filter
// (§4.7): '+' matches one level, a trailing '#' the parent level and
// every level below it. A filter starting with a wildcard matches no topic
// starting with '$' [MQTT-4.7.2-1].
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
			// "a/#" matches "a".
			return frest == "#"
		case !fmore:
			return false
		}
		filter, topic = frest, trest
	}
}

// parseShare splits a shared subscription "$share/group/filter" into its
// group and filter; group is "" for a plain filter.
func parseShare(f string) (group, filter string, err error) {
	if !strings.HasPrefix(f, sharePrefix) {
		return "", f, nil
	}
	group, filter, ok := strings.Cut(f[len(sharePrefix):], "/")
	switch {
	case !ok || filter == "":
		// [MQTT-4.8.2-1]
		return "", "", errors.New("shared subscription without a filter")
	case group == "" || strings.ContainsAny(group, "+#"):
		// [MQTT-4.8.2-2]
		return "", "", errors.New("invalid share name")
	case strings.ContainsAny(group, " \t\r\n.*>"):
		return "", "", errors.New("share name cannot be a NATS queue group")
	}
	return group, filter, nil
}
