package filestore

import (
	"fmt"
	"testing"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

func TestSmoke(t *testing.T) {
	for _, c := range []Compression{CompressionNone, CompressionS2} {
		fs := vfs.NewStrictMem()
		cfg := Config{BlockSize: 1024, Compression: c}
		s, err := Open(fs, "s", cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 100; i++ {
			if _, _, err := s.Store(fmt.Sprintf("foo.%d", i%7), nil, []byte(fmt.Sprintf("msg %d", i)), 0); err != nil {
				t.Fatal(err)
			}
		}
		s.Remove(5, false)
		s.Remove(50, true)
		if err := s.Checkpoint(); err != nil {
			t.Fatal(err)
		}
		st := s.State()
		t.Logf("%+v", st)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Log(fs.String())
		s, err = Open(fs, "s", cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%+v %v", s.State(), s.Recovered())
		for i := uint64(1); i <= 100; i++ {
			m, err := s.Load(i, nil)
			if i == 5 || i == 50 {
				if err != store.ErrDeleted {
					t.Fatal(i, err)
				}
				continue
			}
			if err != nil || string(m.Data) != fmt.Sprintf("msg %d", i-1) {
				t.Fatal(i, err, m)
			}
		}
		s.Close()
	}
}
