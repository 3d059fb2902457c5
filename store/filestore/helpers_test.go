package filestore_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/storetest"
	"github.com/leafbox/leafbox/store/vfs"
)

// errPowerCut is what the injected file system returns once the simulated
// power is gone.
var errPowerCut = errors.New("injected: power cut")

// mustOpen opens a stream and registers its Close.
func mustOpen(t testing.TB, fsys vfs.FS, dir string, cfg filestore.Config) *filestore.Stream {
	t.Helper()
	s, err := filestore.Open(fsys, dir, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testMsg returns the subject, header and data of the i-th test message;
// sizes vary so that records straddle block boundaries differently.
func testMsg(i int) (string, []byte, []byte) {
	subj := fmt.Sprintf("dev.%d.temp", i%5)
	var hdr []byte
	if i%3 == 0 {
		hdr = fmt.Appendf(nil, "NATS/1.0\r\nMsg-Id: %d\r\n\r\n", i)
	}
	data := bytes.Repeat(fmt.Appendf(nil, "<%d>", i), 1+i%7)
	return subj, hdr, data
}

// storeAcked stores message i and, when Store succeeds, appends it to
// acked.
func storeAcked(s store.Stream, i int, acked []storetest.AckedMsg) ([]storetest.AckedMsg, error) {
	subj, hdr, data := testMsg(i)
	seq, _, err := s.Store(subj, hdr, data, 0)
	if err != nil {
		return acked, err
	}
	return append(acked, storetest.AckedMsg{Seq: seq, Subject: subj, Header: hdr, Data: data}), nil
}

// dump is a stream's full observable content, for comparing two streams.
type dump struct {
	state    store.State
	msgs     []string
	subjects map[string]uint64
}

func takeDump(t testing.TB, s store.Stream) dump {
	t.Helper()
	d := dump{state: s.State(), subjects: s.SubjectsState(">")}
	for seq := uint64(0); ; {
		m, err := s.LoadNext(">", seq, nil)
		if errors.Is(err, store.ErrNotFound) {
			return d
		}
		if err != nil {
			t.Fatalf("LoadNext(%d): %v", seq, err)
		}
		if l, err := s.Load(m.Seq, nil); err != nil || l.Seq != m.Seq || string(l.Data) != string(m.Data) {
			t.Fatalf("Load(%d) = %v, %v; LoadNext found it", m.Seq, l, err)
		}
		d.msgs = append(d.msgs, fmt.Sprintf("%d %s %q %q", m.Seq, m.Subject, m.Header, m.Data))
		seq = m.Seq + 1
	}
}

// requireSameContent compares everything but times.
func requireSameContent(t testing.TB, got, want dump) {
	t.Helper()
	if d := diffContent(got, want); d != "" {
		t.Fatal(d)
	}
}

// diffContent describes how two dumps differ, ignoring times, or returns "".
func diffContent(got, want dump) string {
	g, w := got.state, want.state
	if g.Msgs != w.Msgs || g.Bytes != w.Bytes || g.FirstSeq != w.FirstSeq || g.LastSeq != w.LastSeq ||
		g.NumSubjects != w.NumSubjects || g.NumDeleted != w.NumDeleted {
		return fmt.Sprintf("state:\n got %+v\nwant %+v", g, w)
	}
	if strings.Join(got.msgs, "\n") != strings.Join(want.msgs, "\n") {
		return fmt.Sprintf("messages differ:\n got %v\nwant %v", got.msgs, want.msgs)
	}
	if fmt.Sprint(got.subjects) != fmt.Sprint(want.subjects) {
		return fmt.Sprintf("subjects: got %v, want %v", got.subjects, want.subjects)
	}
	return ""
}

// files lists the regular files under dir with their sizes.
func files(t testing.TB, fsys vfs.FS, dir string) map[string]int64 {
	t.Helper()
	des, err := fsys.ReadDir(dir)
	if err != nil {
		t.Fatalf("ReadDir: %v", err)
	}
	out := make(map[string]int64)
	for _, de := range des {
		fi, err := de.Info()
		if err != nil {
			t.Fatal(err)
		}
		out[de.Name()] = fi.Size()
	}
	return out
}

// names returns the sorted names of dir's files with extension ext.
func names(t testing.TB, fsys vfs.FS, dir, ext string) []string {
	t.Helper()
	var out []string
	for name := range files(t, fsys, dir) {
		if path.Ext(name) == ext {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func readAll(t testing.TB, fsys vfs.FS, name string) []byte {
	t.Helper()
	f, err := fsys.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeAll(t testing.TB, fsys vfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// testKey is the server key of the encrypted test stores.
var testKey = []byte("test key: 0123456789abcdef012345")

// testEncryption is encryption with cipher c and testKey.
func testEncryption(c filestore.Cipher) filestore.Encryption {
	return filestore.Encryption{Cipher: c, Key: testKey}
}

// sealOverhead is what sealing adds to each message record under cfg:
// the 12-byte nonce and the 16-byte tag.
func sealOverhead(cfg filestore.Config) int {
	if cfg.Encryption.Enabled() {
		return 28
	}
	return 0
}
