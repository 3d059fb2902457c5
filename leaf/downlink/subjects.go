package downlink

import "strings"

// LocalSubjects returns the local subjects a downlink with these filter
// subjects and prefixes delivers on: each filter with hubPrefix replaced
// by localPrefix, or everything under localPrefix without filters. The
// configuration checks and the leaf runtime's loop prevention both use it.
func LocalSubjects(filters []string, hubPrefix, localPrefix string) []string {
	if len(filters) == 0 {
		return []string{localPrefix + ">"}
	}
	out := make([]string, 0, len(filters))
	for _, f := range filters {
		if rest, ok := strings.CutPrefix(f, hubPrefix); ok && hubPrefix != "" && rest != "" {
			f = rest
		}
		out = append(out, localPrefix+f)
	}
	return out
}
