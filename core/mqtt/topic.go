package mqtt

import (
	"errors"
	"strings"
)

// sharePrefix starts a shared subscription's filter (MQTT 5 §4.8.2).
const sharePrefix = "$share/"

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
