package clock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// writeState replaces the state file at path atomically: a temporary file
// in the same directory, synced, renamed over path, then the directory
// synced so that the rename survives a power cut.
func writeState(path string, st state) (err error) {
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("clock: encode state: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("clock: write state: %w", err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("clock: write state: %w", err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("clock: write state: %w", err)
	}
	if err = f.Sync(); err != nil {
		return fmt.Errorf("clock: write state: %w", err)
	}
	if err = f.Close(); err != nil {
		return fmt.Errorf("clock: write state: %w", err)
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("clock: write state: %w", err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("clock: sync state directory: %w", err)
	}
	defer d.Close()
	if err = d.Sync(); err != nil {
		return fmt.Errorf("clock: sync state directory: %w", err)
	}
	return nil
}
