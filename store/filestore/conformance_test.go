package filestore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/storetest"
	"github.com/leafbox/leafbox/store/vfs"
)

// variants are the configurations every conformance suite runs under, in
// the style of nats-server's testFileStoreAllPermutations: both
// compression settings, synchronous and timed syncing, and blocks small
// enough that streams span many of them.
var variants = []struct {
	name string
	cfg  filestore.Config
}{
	{"none/sync", filestore.Config{}},
	{"s2/sync", filestore.Config{Compression: filestore.CompressionS2}},
	{"none/async/small", filestore.Config{BlockSize: 512, SyncInterval: time.Second}},
	{"s2/sync/small", filestore.Config{BlockSize: 512, Compression: filestore.CompressionS2}},
	// No index cache: every sealed block whose index file is written
	// keeps only its summary and loads its entries on demand.
	{"none/async/small/nocache", filestore.Config{BlockSize: 512, SyncInterval: time.Second, IndexCache: -1}},
	{"s2/sync/small/nocache", filestore.Config{BlockSize: 512, Compression: filestore.CompressionS2, IndexCache: -1}},
}

// opener returns a storetest.OpenStream that opens file streams with base
// settings in a fresh directory of a fresh file system.
func opener(base filestore.Config, osFS bool) storetest.OpenStream {
	return func(t *testing.T, cfg store.Config) store.Stream {
		t.Helper()
		var fsys vfs.FS = vfs.NewStrictMem()
		dir := "stream"
		if osFS {
			fsys, dir = vfs.OS, t.TempDir()
		}
		c := base
		c.Config = cfg
		s, err := filestore.Open(fsys, dir, c)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
}

func TestStreamConformance(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			storetest.RunStreamTests(t, opener(v.cfg, false))
		})
	}
	t.Run("os", func(t *testing.T) {
		storetest.RunStreamTests(t, opener(filestore.Config{BlockSize: 4096}, true))
	})
	t.Run("os/nocache", func(t *testing.T) {
		storetest.RunStreamTests(t, opener(filestore.Config{BlockSize: 4096, IndexCache: -1}, true))
	})
}

func TestStreamModel(t *testing.T) {
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			for seed := int64(1); seed <= 4; seed++ {
				t.Run(fmt.Sprint(seed), func(t *testing.T) {
					storetest.RunModelTest(t, opener(v.cfg, false), seed)
				})
			}
		})
	}
}

func TestConsumerStoreConformance(t *testing.T) {
	for _, cfg := range []filestore.ConsumerConfig{{}, {SyncInterval: time.Second}} {
		t.Run(fmt.Sprint(cfg.SyncInterval), func(t *testing.T) {
			storetest.RunConsumerStoreTests(t, func(t *testing.T) store.ConsumerStore {
				c, err := filestore.OpenConsumerStoreConfig(vfs.NewStrictMem(), "consumer", cfg)
				if err != nil {
					t.Fatalf("OpenConsumerStore: %v", err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			})
		})
	}
}
