package jetstream

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/memstore"
)

// OpenInternalStream opens, creating it when absent, a message store for
// the server's own state (store/mqttstate keeps MQTT sessions, queues and
// retained messages in such streams). It lives beside the API's file
// streams, in StoreDir/<name>/msgs, or in memory when StoreDir is empty,
// but the API neither lists nor reaches it: name must contain a '.', which
// no API stream name may, and the directory has no meta.json, so Start's
// restore passes it over.
//
// Durability follows SyncInterval: zero or negative ("always") makes
// Store, Remove and Purge return only once the change is fsynced; a
// positive interval bounds the window a power cut may lose. The caller
// owns the stream and closes it; Close of the engine does not, and its
// bytes are not counted against MaxStore.
func (e *Engine) OpenInternalStream(name string, cfg store.Config) (store.Stream, error) {
	if !strings.Contains(name, ".") || strings.ContainsAny(name, `/\`) || strings.HasPrefix(name, ".") {
		return nil, fmt.Errorf("%w: jetstream: internal stream name %q must contain '.', not start with one, and have no path separator",
			store.ErrInvalidConfig, name)
	}
	e.mu.RLock()
	closed := e.closed
	e.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	cfg.Name = name
	if e.cfg.StoreDir == "" {
		return memstore.New(cfg)
	}
	fc := filestore.Config{Config: cfg, SyncInterval: max(e.cfg.SyncInterval, 0), Encryption: e.cfg.Encryption}
	st, err := filestore.Open(e.fs, filepath.Join(e.cfg.StoreDir, name, "msgs"), fc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: internal stream %s: %w", name, err)
	}
	if r := st.Recovered(); r.Lost() || r.TruncatedBytes > 0 {
		e.log.Warn("jetstream: internal stream recovered", "stream", name, "report", r.String())
	}
	return st, nil
}
