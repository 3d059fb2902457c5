package filestore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/vfs"
)

// parseIndexSkim gives what parseIndex gives but the messages, for a
// version 2 file.
func TestParseIndexSkim(t *testing.T) {
	sc := blockScan{
		msgs: []scannedMsg{
			{seq: 5, ts: 100, off: 0, length: 50, subject: "a", hdr: true},
			{seq: 6, ts: 110, off: 50, length: 60, subject: "b"},
		},
		tombs: []seqRange{{1, 4}}, maxSeq: 6, lastTime: 110, rawLen: 110,
	}
	b := appendIndex(nil, indexMeta{id: 2, stamp: 9, fileSize: 158}, &sc)
	intern := func(p []byte) string { return string(p) }
	meta, full, err := parseIndex(b, intern)
	if err != nil {
		t.Fatal(err)
	}
	smeta, skim, skipped, err := parseIndexSkim(b, intern, nil)
	if err != nil || !skipped || smeta != meta || skim.msgs != nil {
		t.Fatalf("skim: %+v %+v skipped %v, %v", smeta, skim, skipped, err)
	}
	full.msgs = nil
	if !reflect.DeepEqual(skim, full) {
		t.Fatalf("skim %+v, want %+v", skim, full)
	}
}

// An index file with a sound checksum but messages that cannot be (out of
// order) is found when Open reads the messages of its block, after the
// first read skipped them: the block is read record by record instead,
// nothing is lost, and the report counts the index as stale.
func TestOpenBadMessagesInSoundIndex(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	cfg := Config{BlockSize: 1024, SyncInterval: time.Second}
	s, err := Open(vfs.OS, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if _, _, err := s.Store("a.b", nil, fmt.Appendf(nil, "message %d", i), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	name := indexName(dir, 1)
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	meta, sc, err := parseIndex(data, func(p []byte) string { return string(p) })
	if err != nil || len(sc.msgs) < 2 {
		t.Fatalf("index of block 1: %d msgs, %v", len(sc.msgs), err)
	}
	sc.msgs[1].seq = sc.msgs[0].seq
	if err := os.WriteFile(name, appendIndex(nil, meta, &sc), 0o600); err != nil {
		t.Fatal(err)
	}

	s, err = Open(vfs.OS, dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r := s.Recovered(); r.StaleIndexes != 1 || r.ScannedBlocks != 1 || r.Lost() {
		t.Fatalf("report %+v, want one stale index and one scanned block", r)
	}
	for i := range 60 {
		m, err := s.Load(uint64(i+1), nil)
		if err != nil || string(m.Data) != fmt.Sprintf("message %d", i) {
			t.Fatalf("Load(%d) = %v, %v", i+1, m, err)
		}
	}
	if _, err := s.Load(61, nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Load(61): %v", err)
	}
}
