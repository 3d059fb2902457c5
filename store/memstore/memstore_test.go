package memstore_test

import (
	"fmt"
	"testing"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/memstore"
	"github.com/leafbox/leafbox/store/storetest"
)

// openStream is the suites' constructor for memstore.
func openStream(t *testing.T, cfg store.Config) store.Stream {
	t.Helper()
	s, err := memstore.New(cfg)
	if err != nil {
		t.Fatalf("New(%+v): %v", cfg, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestStream(t *testing.T) {
	storetest.RunStreamTests(t, openStream)
}

func TestConsumerStore(t *testing.T) {
	storetest.RunConsumerStoreTests(t, func(t *testing.T) store.ConsumerStore {
		c := memstore.NewConsumerStore()
		t.Cleanup(func() { _ = c.Close() })
		return c
	})
}

func TestModel(t *testing.T) {
	for seed := range int64(16) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			t.Parallel()
			storetest.RunModelTest(t, openStream, seed)
		})
	}
}
