package jetstream

import (
	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/jsapi"
	"github.com/leafbox/leafbox/store/memstore"
)

// openStreamStore opens the message store of a stream: memory, or file
// under dir/msgs.
func (e *Engine) openStreamStore(cfg *jsapi.StreamConfig, dir string) (store.Stream, error) {
	sc := cfg.StoreConfig()
	if cfg.Storage == jsapi.MemoryStorage {
		return memstore.New(sc)
	}
	return e.openFileStream(cfg, sc, dir)
}

// openConsumerStore opens a persisted consumer's state store in dir.
func (e *Engine) openConsumerStore(dir string) (store.ConsumerStore, error) {
	return e.openFileConsumerStore(dir)
}
