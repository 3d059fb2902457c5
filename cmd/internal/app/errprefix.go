package app

import (
	"fmt"
	"strings"
)

// withPrefix returns err with "prefix: " in front, unless its message
// already starts so: subsystems prefix their own errors, and wrapping
// them again doubled the prefix ("jetstream: jetstream: ...").
func withPrefix(prefix string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), prefix+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", prefix, err)
}
