package storetest_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/leafbox/leafbox/store"
	"github.com/leafbox/leafbox/store/memstore"
	"github.com/leafbox/leafbox/store/storetest"
)

// recorder is a testing.TB that records failures instead of failing, so
// the checks themselves can be tested. Fatal stops the calling goroutine,
// as testing.T does.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

// run calls f with a fresh recorder on its own goroutine and returns what
// it recorded.
func run(t *testing.T, f func(tb testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.errors
}

func newStream(t *testing.T) store.Stream {
	t.Helper()
	s, err := memstore.New(store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// storeAcked stores messages and returns them as acknowledged.
func storeAcked(t *testing.T, s store.Stream, n int) []storetest.AckedMsg {
	t.Helper()
	var acked []storetest.AckedMsg
	for i := range n {
		subj, hdr, data := fmt.Sprintf("s.%d", i%3), fmt.Appendf(nil, "h%d", i), fmt.Appendf(nil, "d%d", i)
		seq, _, err := s.Store(subj, hdr, data, 0)
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, storetest.AckedMsg{Seq: seq, Subject: subj, Header: hdr, Data: data})
	}
	return acked
}

func requireReported(t *testing.T, errs []string, want string) {
	t.Helper()
	for _, e := range errs {
		if strings.Contains(e, want) {
			return
		}
	}
	t.Fatalf("expected a failure containing %q, got %q", want, errs)
}

func TestCheckPrefixAcceptsIntactStream(t *testing.T) {
	s := newStream(t)
	acked := storeAcked(t, s, 20)
	// Unacknowledged messages around and among the acknowledged ones are
	// fine.
	_, _, _ = s.Store("unacked", nil, nil, 0)
	if errs := run(t, func(tb testing.TB) { storetest.CheckPrefix(tb, acked[:10], s) }); len(errs) > 0 {
		t.Fatalf("CheckPrefix failed an intact stream: %q", errs)
	}
	if errs := run(t, func(tb testing.TB) { storetest.CheckPrefix(tb, acked[5:15:15], s) }); len(errs) > 0 {
		t.Fatalf("CheckPrefix failed an intact stream: %q", errs)
	}
	sparse := []storetest.AckedMsg{acked[1], acked[7], acked[19]}
	if errs := run(t, func(tb testing.TB) { storetest.CheckPrefix(tb, sparse, s) }); len(errs) > 0 {
		t.Fatalf("CheckPrefix failed an intact stream: %q", errs)
	}
}

func TestCheckPrefixReportsLoss(t *testing.T) {
	s := newStream(t)
	acked := storeAcked(t, s, 10)
	_, _ = s.Remove(4, false)
	requireReported(t, run(t, func(tb testing.TB) { storetest.CheckPrefix(tb, acked, s) }), "acknowledged message 4")
}

func TestCheckPrefixReportsLostTail(t *testing.T) {
	s := newStream(t)
	acked := storeAcked(t, s, 10)
	acked = append(acked, storetest.AckedMsg{Seq: 11, Subject: "s.x", Data: []byte("never stored")})
	requireReported(t, run(t, func(tb testing.TB) { storetest.CheckPrefix(tb, acked, s) }), "LastSeq 10")
}

func TestCheckPrefixReportsDifferentContent(t *testing.T) {
	s := newStream(t)
	acked := storeAcked(t, s, 10)
	acked[6].Data = []byte("something else")
	requireReported(t, run(t, func(tb testing.TB) { storetest.CheckPrefix(tb, acked, s) }), "acknowledged message 7 differs")
	acked[6].Data = []byte("d6")
	acked[2].Subject = "other"
	requireReported(t, run(t, func(tb testing.TB) { storetest.CheckPrefix(tb, acked, s) }), "differs")
}

func TestCheckPrefixRejectsUnorderedInput(t *testing.T) {
	s := newStream(t)
	acked := storeAcked(t, s, 3)
	acked[0], acked[1] = acked[1], acked[0]
	requireReported(t, run(t, func(tb testing.TB) { storetest.CheckPrefix(tb, acked, s) }), "out of order")
}

// skipWalk hides one message from LoadNext while Load still finds it: the
// kind of index damage only the walk catches.
type skipWalk struct {
	store.Stream
	hide uint64
}

func (w skipWalk) LoadNext(filter string, start uint64, sm *store.Msg) (*store.Msg, error) {
	m, err := w.Stream.LoadNext(filter, start, sm)
	if err == nil && m.Seq == w.hide {
		return w.Stream.LoadNext(filter, m.Seq+1, sm)
	}
	return m, err
}

func TestCheckPrefixReportsBrokenWalk(t *testing.T) {
	s := newStream(t)
	acked := storeAcked(t, s, 10)
	requireReported(t, run(t, func(tb testing.TB) { storetest.CheckPrefix(tb, acked, skipWalk{s, 5}) }), "skipped acknowledged message 5")
}

func TestCheckResume(t *testing.T) {
	s := newStream(t)
	acked := storeAcked(t, s, 5)
	if errs := run(t, func(tb testing.TB) { storetest.CheckResume(tb, acked, s, "after") }); len(errs) > 0 {
		t.Fatalf("CheckResume failed: %q", errs)
	}
	// An acknowledgement above what the stream recovered means sequences
	// would repeat.
	acked = append(acked, storetest.AckedMsg{Seq: 9})
	requireReported(t, run(t, func(tb testing.TB) { storetest.CheckResume(tb, acked, s, "after") }), "reused sequence 7")
}
