package jetstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/leafbox/leafbox/store/vfs"
	"io"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
)

// metaFile is the name of the JSON file describing a stream or consumer.
const metaFile = "meta.json"

// streamMeta is a file stream's meta.json.
type streamMeta struct {
	Config  jsapi.StreamConfig `json:"config"`
	Created time.Time          `json:"created"`
}

// consumerMeta is a persisted consumer's meta.json.
type consumerMeta struct {
	Stream  string               `json:"stream_name"`
	Name    string               `json:"name"`
	Config  jsapi.ConsumerConfig `json:"config"`
	Created time.Time            `json:"created"`
}

// writeMeta writes v as dir/meta.json, atomically and durably
// (vfs.WriteFile).
func (e *Engine) writeMeta(dir string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if err := vfs.WriteFile(e.fs, filepath.Join(dir, metaFile), b); err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	return nil
}

// readMeta decodes dir/meta.json into v.
func (e *Engine) readMeta(dir string, v any) error {
	f, err := e.fs.Open(filepath.Join(dir, metaFile))
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// removeAll deletes a directory tree.
func (e *Engine) removeAll(dir string) error { return e.fs.RemoveAll(dir) }

// restore opens every file stream under StoreDir with its consumers. A
// stream or consumer that cannot be opened is logged and skipped, so one
// damaged directory never stops the engine.
func (e *Engine) restore() error {
	if e.cfg.StoreDir == "" {
		return nil
	}
	if err := e.fs.MkdirAll(e.cfg.StoreDir, vfs.PermDir); err != nil {
		return fmt.Errorf("jetstream: store dir: %w", err)
	}
	entries, err := e.fs.ReadDir(e.cfg.StoreDir)
	if err != nil {
		return fmt.Errorf("jetstream: store dir: %w", err)
	}
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		dir := filepath.Join(e.cfg.StoreDir, ent.Name())
		var meta streamMeta
		if err := e.readMeta(dir, &meta); err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				e.log.Error("jetstream: skipping stream", "dir", dir, "err", err)
				e.restoreFailed(ent.Name(), "", fmt.Errorf("%s: %w", metaFile, err))
			}
			continue
		}
		if meta.Config.Name != ent.Name() {
			e.log.Error("jetstream: skipping stream with mismatched name", "dir", dir, "name", meta.Config.Name)
			e.restoreFailed(ent.Name(), "", fmt.Errorf("%s names stream %q", metaFile, meta.Config.Name))
			continue
		}
		if err := e.restoreStream(dir, meta); err != nil {
			e.log.Error("jetstream: skipping stream", "stream", meta.Config.Name, "err", err)
			e.restoreFailed(meta.Config.Name, "", err)
		}
	}
	return nil
}

// RestoreFailure is a stream, or a consumer, that Start found in the store
// but could not load: it was skipped so that the rest runs.
type RestoreFailure struct {
	// Stream is the stream's name (its directory's, when its meta.json
	// is unreadable).
	Stream string
	// Consumer is the consumer's name, or "" for the stream itself.
	Consumer string
	// Err is why it did not load.
	Err error
}

// restoreFailed records a stream or consumer that Start skipped.
func (e *Engine) restoreFailed(stream, consumer string, err error) {
	e.mu.Lock()
	e.failures = append(e.failures, RestoreFailure{Stream: stream, Consumer: consumer, Err: err})
	e.mu.Unlock()
}

// RestoreFailures returns the streams and consumers that Start skipped
// because they failed to load, in the order met; nil when all loaded.
func (e *Engine) RestoreFailures() []RestoreFailure {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return append([]RestoreFailure(nil), e.failures...)
}

// restoreStream opens one file stream and its consumers.
func (e *Engine) restoreStream(dir string, meta streamMeta) error {
	s, err := e.newStream(meta.Config, meta.Created, true)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.streams[s.name] = s
	e.mu.Unlock()
	if err := s.subscribe(meta.Config.Subjects); err != nil {
		return err
	}
	obs := filepath.Join(dir, "obs")
	entries, err := e.fs.ReadDir(obs)
	if err != nil {
		return nil
	}
	for _, ent := range entries {
		if !ent.IsDir() {
			continue
		}
		cdir := filepath.Join(obs, ent.Name())
		var cm consumerMeta
		if err := e.readMeta(cdir, &cm); err != nil {
			e.log.Error("jetstream: skipping consumer", "dir", cdir, "err", err)
			e.restoreFailed(s.name, ent.Name(), fmt.Errorf("%s: %w", metaFile, err))
			continue
		}
		if err := s.restoreConsumer(cm); err != nil {
			e.log.Error("jetstream: skipping consumer", "stream", s.name, "consumer", cm.Name, "err", err)
			e.restoreFailed(s.name, cm.Name, err)
		}
	}
	return nil
}

// restoreConsumer recreates a persisted consumer from its meta and state.
func (s *stream) restoreConsumer(cm consumerMeta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.newConsumer(cm.Config, cm.Created)
	if c.name != cm.Name {
		return fmt.Errorf("jetstream: consumer name %q does not match %q", c.name, cm.Name)
	}
	c.filters = consumerFilters(&c.cfg)
	if err := c.openStore(true); err != nil {
		return err
	}
	st, err := c.cstore.State()
	if err != nil {
		c.cstore.Close()
		return err
	}
	if st == nil {
		st = &store.ConsumerState{}
	}
	if c.cfg.DeliverPolicy == jsapi.DeliverLastPerSubject && st.Delivered.Consumer == 0 {
		// The last-per-subject queue is not persisted; nothing was
		// delivered yet, so build it again.
		c.startPosition()
	} else {
		c.restoreState(st)
	}
	s.setConsumer(c.name, c)
	c.start()
	return nil
}
