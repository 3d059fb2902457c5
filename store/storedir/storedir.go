package storedir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/leafbox/leafbox/store/vfs"
)

// Names of the entries of the store directory.
const (
	lockName       = "LOCK"
	streamsName    = "streams"
	outboxName     = "outbox"
	deadLetterName = "deadletter"
	stateName      = "state"

	// metaFile marks a JetStream stream directory (store/jetstream).
	metaFile = "meta.json"

	clockFile     = "clock.json"
	schedulerFile = "scheduler.state.json"
	stateSuffix   = ".state.json"
)

// MaxUplinkNameLen bounds an uplink's name so that its state file's
// temporary name, "uplink-<name>.state.json.tmp", fits the 255 bytes a
// file name may have.
const MaxUplinkNameLen = 255 - len("uplink-") - len(stateSuffix+".tmp")

// Layout computes the paths of a store directory; it opens nothing, so
// configuration checks can show where things will live.
type Layout struct {
	// Root is the store directory.
	Root string
}

// At returns the layout of the store directory root.
func At(root string) Layout { return Layout{Root: root} }

// Lock is the lock file.
func (l Layout) Lock() string { return filepath.Join(l.Root, lockName) }

// Streams is the directory of the JetStream file streams, the engine's
// store directory (store/jetstream Config.StoreDir).
func (l Layout) Streams() string { return filepath.Join(l.Root, streamsName) }

// Outboxes is the directory holding every uplink's outbox.
func (l Layout) Outboxes() string { return filepath.Join(l.Root, outboxName) }

// Outbox is uplink's outbox directory.
func (l Layout) Outbox(uplink string) string { return filepath.Join(l.Outboxes(), uplink) }

// DeadLetters is the directory holding every uplink's dead letters.
func (l Layout) DeadLetters() string { return filepath.Join(l.Root, deadLetterName) }

// DeadLetter is uplink's dead-letter directory.
func (l Layout) DeadLetter(uplink string) string { return filepath.Join(l.DeadLetters(), uplink) }

// State is the directory of the small state files.
func (l Layout) State() string { return filepath.Join(l.Root, stateName) }

// ClockFile is the clock's state file.
func (l Layout) ClockFile() string { return filepath.Join(l.State(), clockFile) }

// SchedulerFile is the uplink scheduler's state file.
func (l Layout) SchedulerFile() string { return filepath.Join(l.State(), schedulerFile) }

// UplinkStateFile is uplink's outbox state file.
func (l Layout) UplinkStateFile(uplink string) string {
	return filepath.Join(l.State(), "uplink-"+uplink+stateSuffix)
}

// subtrees are the directories Open creates, in the order it creates them.
func (l Layout) subtrees() []string {
	return []string{l.Streams(), l.Outboxes(), l.DeadLetters(), l.State()}
}

// InUseError is returned by Open when another holder has the lock.
type InUseError struct {
	Dir  string // the store directory
	Lock string // the lock file
	PID  int    // the holder's process id; 0 when it could not be read
}

// Error implements error.
func (e *InUseError) Error() string {
	if e.PID <= 0 {
		return fmt.Sprintf("store dir %s is in use by another process (lock %s)", e.Dir, e.Lock)
	}
	return fmt.Sprintf("store dir %s is in use by pid %d (lock %s)", e.Dir, e.PID, e.Lock)
}

// errLocked is what lockFile returns when someone else holds the lock.
var errLocked = errors.New("storedir: locked")

// Dir is an open store directory: its Layout, held exclusively until
// Close.
type Dir struct {
	Layout
	// Migrated describes each move Open made from an older layout, for
	// the caller to log; empty when there was nothing to move.
	Migrated []string

	lock *os.File
}

// Open creates the store directory root if missing, takes its lock,
// migrates an older layout and creates the subtrees. Close releases the
// lock. See the package documentation.
func Open(root string) (*Dir, error) {
	if root == "" {
		return nil, errors.New("storedir: no store directory")
	}
	l := At(filepath.Clean(root))
	if err := vfs.OS.MkdirAll(l.Root, vfs.PermDir); err != nil {
		return nil, fmt.Errorf("storedir: store dir %s: %w", l.Root, err)
	}
	if fi, err := os.Stat(l.Root); err != nil {
		return nil, fmt.Errorf("storedir: store dir %s: %w", l.Root, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("storedir: store dir %s is not a directory", l.Root)
	}
	if fi, err := os.Lstat(l.Lock()); err == nil && fi.IsDir() {
		return nil, fmt.Errorf("storedir: lock %s is a directory (a stream of an older leafbox?); move it to %s",
			l.Lock(), filepath.Join(l.Streams(), lockName))
	}
	f, err := lockFile(l.Lock())
	if errors.Is(err, errLocked) {
		return nil, &InUseError{Dir: l.Root, Lock: l.Lock(), PID: readPID(l.Lock())}
	}
	if err != nil {
		return nil, fmt.Errorf("storedir: lock %s: %w", l.Lock(), err)
	}
	d := &Dir{Layout: l, lock: f}
	if err := d.writePID(); err != nil {
		_ = d.Close()
		return nil, fmt.Errorf("storedir: lock %s: %w", l.Lock(), err)
	}
	d.Migrated, err = migrate(vfs.OS, l)
	if err == nil {
		err = tighten(l)
	}
	if err != nil {
		_ = d.Close()
		return nil, err
	}
	return d, nil
}

// writePID replaces the lock file's contents with this process's id.
func (d *Dir) writePID() error {
	if err := d.lock.Truncate(0); err != nil {
		return err
	}
	if _, err := d.lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		return err
	}
	return d.lock.Sync()
}

// Close releases the lock; the LOCK file stays (removing it could let two
// processes each lock a different file). Closing twice does nothing.
func (d *Dir) Close() error {
	if d == nil || d.lock == nil {
		return nil
	}
	f := d.lock
	d.lock = nil
	_ = f.Truncate(0) // no stale pid for the next reader
	if err := unlockFile(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("storedir: unlock %s: %w", d.Lock(), err)
	}
	return f.Close()
}

// readPID returns the pid in the lock file, or 0.
func readPID(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

// tighten takes the group-write and other-user bits off the subtree
// directories, which an older leafbox created 0755.
func tighten(l Layout) error {
	for _, dir := range l.subtrees() {
		fi, err := os.Stat(dir)
		if err != nil {
			return fmt.Errorf("storedir: %w", err)
		}
		if m := fi.Mode().Perm(); m&0o027 != 0 {
			if err := os.Chmod(dir, m&^0o027); err != nil {
				return fmt.Errorf("storedir: %w", err)
			}
		}
	}
	return nil
}
