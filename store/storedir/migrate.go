package storedir

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/leafbox/leafbox/store/vfs"
)

// streamEntries are what a JetStream stream directory holds besides its
// meta file (store/jetstream): the message blocks and the consumers.
var streamEntries = []string{"msgs", "obs"}

// migrate moves what an older layout left in l.Root into l's subtrees and
// creates the missing subtrees. Each step is a rename that fsys makes
// durable, and each is skipped when already done, so migrate finishes an
// interrupted run and does nothing on a migrated store. It returns a
// description of each move.
func migrate(fsys vfs.FS, l Layout) ([]string, error) {
	m := migration{fsys: fsys, l: l}
	// An old stream named "streams" occupies the streams root.
	m.splitStream(l.Streams(), streamsName)
	m.mkdir(l.Streams())
	m.moveStreams()
	// An old stream named "outbox" shares the outbox root with the
	// uplinks' outboxes and state files.
	m.splitStream(l.Outboxes(), outboxName)
	for _, dir := range l.subtrees()[1:] {
		m.mkdir(dir)
	}
	m.moveStateFiles()
	if m.err != nil {
		return nil, fmt.Errorf("storedir: migrating %s: %w", l.Root, m.err)
	}
	return m.moved, nil
}

// migration is one run of migrate; after the first error every step does
// nothing.
type migration struct {
	fsys  vfs.FS
	l     Layout
	moved []string
	err   error
}

// exists reports whether path exists; other errors stop the migration.
func (m *migration) exists(path string) bool {
	if m.err != nil {
		return false
	}
	_, err := m.fsys.Stat(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.err = err
	}
	return err == nil
}

func (m *migration) mkdir(dir string) {
	if m.err == nil {
		m.err = m.fsys.MkdirAll(dir, vfs.PermDir)
	}
}

// rename moves from to to, refusing to replace anything at to.
func (m *migration) rename(from, to string) {
	if m.exists(to) {
		m.err = fmt.Errorf("cannot move %s to %s: it exists", from, to)
	}
	if m.err != nil {
		return
	}
	if m.err = m.fsys.Rename(from, to); m.err == nil {
		m.moved = append(m.moved, fmt.Sprintf("moved %s to %s", from, to))
	}
}

// remove removes a leftover temporary file, if any.
func (m *migration) remove(path string) {
	if m.exists(path) {
		if err := m.fsys.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			m.err = err
		}
	}
}

// moveStreams moves every old stream directory <root>/<name>/ but those
// split by splitStream into the streams subtree.
func (m *migration) moveStreams() {
	if m.err != nil {
		return
	}
	ents, err := m.fsys.ReadDir(m.l.Root)
	if err != nil {
		m.err = err
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !e.IsDir() || name == streamsName || name == outboxName || strings.HasPrefix(name, ".") {
			continue
		}
		dir := filepath.Join(m.l.Root, name)
		if m.exists(filepath.Join(dir, metaFile)) {
			m.rename(dir, filepath.Join(m.l.Streams(), name))
		}
	}
}

// splitStream moves the old stream called name out of dir, which stays
// (it is the root of another subtree), into streams/<name>: first its
// entries into streams/.<name>.migrating/ (a name no stream can have),
// the meta file last, then that directory to its place. A meta file still
// in dir means the first part is unfinished; a staging directory with its
// meta file means the second is.
func (m *migration) splitStream(dir, name string) {
	staging := filepath.Join(m.l.Streams(), "."+name+".migrating")
	if m.exists(filepath.Join(dir, metaFile)) {
		m.mkdir(staging)
		for _, e := range streamEntries {
			if m.exists(filepath.Join(dir, e)) {
				m.rename(filepath.Join(dir, e), filepath.Join(staging, e))
			}
		}
		m.remove(filepath.Join(dir, metaFile+".tmp"))
		m.rename(filepath.Join(dir, metaFile), filepath.Join(staging, metaFile))
	}
	if m.exists(filepath.Join(staging, metaFile)) {
		m.rename(staging, filepath.Join(m.l.Streams(), name))
	}
}

// moveStateFiles moves <root>/clock.json, <root>/outbox/scheduler.state.json
// and <root>/outbox/<uplink>.state.json into the state subtree and removes
// their leftover temporary files.
func (m *migration) moveStateFiles() {
	m.moveFile(filepath.Join(m.l.Root, clockFile), m.l.ClockFile())
	if m.err != nil {
		return
	}
	ents, err := m.fsys.ReadDir(m.l.Outboxes())
	if err != nil {
		m.err = err
		return
	}
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		old := filepath.Join(m.l.Outboxes(), name)
		switch {
		case name == schedulerFile:
			m.moveFile(old, m.l.SchedulerFile())
		case strings.HasSuffix(name, stateSuffix):
			m.moveFile(old, m.l.UplinkStateFile(strings.TrimSuffix(name, stateSuffix)))
		case strings.HasSuffix(name, stateSuffix+".tmp"):
			m.remove(old)
		}
	}
}

// moveFile moves a state file from old to its new place and removes old's
// temporary file. If both exist (an older leafbox ran after the
// migration), the one at the new place wins and old stays, unread.
func (m *migration) moveFile(old, new string) {
	m.remove(old + ".tmp")
	if !m.exists(old) {
		return
	}
	if m.exists(new) {
		m.moved = append(m.moved, fmt.Sprintf("left %s: %s exists", old, new))
		return
	}
	m.rename(old, new)
}
