package outbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"

	"github.com/leafbox/leafbox/store/vfs"
)

// stateVersion is the version of the state files' format.
const stateVersion = 1

// stateEnvelope is a state file on disk: one JSON object holding the
// format version, the body and the CRC-32C (Castagnoli) of the body's
// bytes, so that a torn or damaged file is refused rather than misread.
type stateEnvelope struct {
	Version int             `json:"version"`
	CRC     uint32          `json:"crc32c"`
	Body    json.RawMessage `json:"body"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrBadState means a state file exists but cannot be read back: its
// version is unknown or its checksum does not match.
var ErrBadState = errors.New("outbox: invalid state file")

// readState loads the state file at path into v. A missing file leaves v
// untouched and returns nil.
func readState(fsys vfs.FS, path string, v any) error {
	f, err := fsys.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("outbox: state file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return fmt.Errorf("outbox: state file %s: %w", path, err)
	}
	var env stateEnvelope
	if err := json.Unmarshal(b, &env); err != nil {
		return fmt.Errorf("%w %s: %v (remove it to start over)", ErrBadState, path, err)
	}
	if env.Version != stateVersion {
		return fmt.Errorf("%w %s: version %d, want %d", ErrBadState, path, env.Version, stateVersion)
	}
	if crc32.Checksum(env.Body, castagnoli) != env.CRC {
		return fmt.Errorf("%w %s: checksum mismatch (remove it to start over)", ErrBadState, path)
	}
	if err := json.Unmarshal(env.Body, v); err != nil {
		return fmt.Errorf("%w %s: %v (remove it to start over)", ErrBadState, path, err)
	}
	return nil
}

// writeState replaces the state file at path with v atomically
// (vfs.WriteFile).
func writeState(fsys vfs.FS, path string, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return err
	}
	b, err := json.Marshal(stateEnvelope{Version: stateVersion, CRC: crc32.Checksum(body, castagnoli), Body: body})
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := vfs.WriteFile(fsys, path, b); err != nil {
		return fmt.Errorf("outbox: state file: %w", err)
	}
	return nil
}
