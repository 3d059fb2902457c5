package clock

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/leafbox/leafbox/store/vfs"
	"io/fs"
	"os"
	"time"
)

// stateVersion is the state file's format version.
const stateVersion = 1

// state is the state file's content.
type state struct {
	Version       int       `json:"version"`
	LastKnownGood time.Time `json:"last_known_good"`
	BootID        string    `json:"boot_id,omitempty"`
}

// readState reads the state file at path; a missing file is an empty
// state.
func readState(path string) (state, error) {
	var st state
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("clock: read state: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("clock: state file %s: %w", path, err)
	}
	if st.Version != stateVersion {
		return st, fmt.Errorf("clock: state file %s: unknown version %d", path, st.Version)
	}
	return st, nil
}

// writeState replaces the state file at path atomically and durably
// (vfs.WriteFile).
func writeState(path string, st state) error {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("clock: encode state: %w", err)
	}
	if err := vfs.WriteFile(vfs.OS, path, append(b, '\n')); err != nil {
		return fmt.Errorf("clock: state: %w", err)
	}
	return nil
}
