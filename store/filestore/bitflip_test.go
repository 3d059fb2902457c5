package filestore_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/storetest"
	"github.com/leafbox/leafbox/store/vfs"
)

// TestBitFlipsSealedBlock damages every byte of a sealed block (S2
// compressed or not) of a stream that spans several blocks. With the
// block's index file present, Open trusts the index and a damaged record
// shows up when loaded, as ErrCorrupt; without it, Open scans the block
// and counts the damage. Either way Open succeeds, no load returns wrong
// content, and the other blocks are untouched.
func TestBitFlipsSealedBlock(t *testing.T) {
	for _, c := range crashConfigs {
		for _, keepIndex := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/index=%v", c.name, keepIndex), func(t *testing.T) {
				mem := vfs.NewStrictMem()
				s := mustOpen(t, mem, "s", c.cfg)
				var acked []storetest.AckedMsg
				for i := range 30 {
					acked, _ = storeAcked(s, i, acked)
				}
				if err := s.Checkpoint(); err != nil {
					t.Fatal(err)
				}
				s.Close()
				blocks := names(t, mem, "s", ".blk")
				if len(blocks) < 3 {
					t.Fatalf("%d blocks", len(blocks))
				}
				blk, idx := "s/"+blocks[1], "s/"+blocks[1][:10]+".idx"
				full, fullIdx := readAll(t, mem, blk), readAll(t, mem, idx)
				// Which messages live in the damaged block.
				inBlock := map[uint64]bool{}
				{
					s := mustOpen(t, mem, "s", c.cfg)
					s.Close()
					mem.Remove(blk)
					s = mustOpen(t, mem, "s", c.cfg)
					for _, a := range acked {
						if _, err := s.Load(a.Seq, nil); err != nil {
							inBlock[a.Seq] = true
						}
					}
					s.Close()
				}
				if len(inBlock) == 0 {
					t.Fatal("no message in the damaged block")
				}
				for off := range full {
					damaged := append([]byte(nil), full...)
					damaged[off] ^= 1 << (off % 8)
					writeAll(t, mem, blk, damaged)
					if keepIndex {
						writeAll(t, mem, idx, fullIdx)
					} else {
						mem.Remove(idx)
					}
					s, err := filestore.Open(mem, "s", c.cfg)
					if err != nil {
						t.Fatalf("flip at %d: %v", off, err)
					}
					r := s.Recovered()
					if !keepIndex && !r.Lost() {
						t.Fatalf("flip at %d: damage not counted: %v", off, r)
					}
					corrupt := 0
					for _, a := range acked {
						m, err := s.Load(a.Seq, nil)
						switch {
						case err == nil:
							if m.Subject != a.Subject || string(m.Data) != string(a.Data) {
								t.Fatalf("flip at %d: Load(%d) returned wrong content", off, a.Seq)
							}
						case !inBlock[a.Seq]:
							t.Fatalf("flip at %d: message %d of another block: %v", off, a.Seq, err)
						case errors.Is(err, store.ErrCorrupt):
							corrupt++
						case !errors.Is(err, store.ErrDeleted):
							t.Fatalf("flip at %d: Load(%d): %v", off, a.Seq, err)
						}
					}
					if !r.Lost() && corrupt == 0 && s.State().Msgs != uint64(len(acked)) {
						t.Fatalf("flip at %d: messages lost silently", off)
					}
					s.Close()
				}
			})
		}
	}
}
