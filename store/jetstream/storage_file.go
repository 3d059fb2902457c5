package jetstream

import (
	"path/filepath"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/jsapi"
)

// commitBackstop is the file engine's own sync interval in sync-always
// mode, where the committer syncs before every ack: it only bounds how
// long publishes without a reply may stay unsynced.
const commitBackstop = time.Second

// openFileStream opens a file stream's blocks under dir/msgs.
func (e *Engine) openFileStream(cfg *jsapi.StreamConfig, sc store.Config, dir string) (store.Stream, error) {
	interval := e.cfg.SyncInterval
	if interval <= 0 {
		interval = commitBackstop
	}
	fc := filestore.Config{Config: sc, SyncInterval: interval, Encryption: e.cfg.Encryption}
	if cfg.Compression == jsapi.S2Compression && !e.cfg.Encryption.Enabled() {
		fc.Compression = filestore.CompressionS2
	}
	st, err := filestore.Open(e.fs, filepath.Join(dir, "msgs"), fc)
	if err != nil {
		return nil, err
	}
	if r := st.Recovered(); r.Lost() || r.TruncatedBytes > 0 {
		e.log.Warn("jetstream: stream store recovered", "stream", cfg.Name, "report", r.String())
	}
	if r := st.Recovered(); r.ConvertedBlocks > 0 {
		e.log.Info("jetstream: stream store encrypted", "stream", cfg.Name, "blocks", r.ConvertedBlocks, "cipher", e.cfg.Encryption.Cipher.String())
	}
	return st, nil
}

// openFileConsumerStore opens a consumer's state log in dir.
func (e *Engine) openFileConsumerStore(dir string) (store.ConsumerStore, error) {
	return filestore.OpenConsumerStoreConfig(e.fs, dir, filestore.ConsumerConfig{SyncInterval: max(e.cfg.SyncInterval, 0), Encryption: e.cfg.Encryption})
}
