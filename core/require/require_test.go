package require

import (
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"
)

// recorder is a testing.TB that records a failure instead of ending the
// test, so that the assertions can be checked failing.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r) // t.Fatalf does not return either
}

// run calls f with a recorder and returns the failure it recorded, "" for
// none.
func run(t *testing.T, f func(tb testing.TB)) (failed string) {
	r := &recorder{TB: t}
	var wg sync.WaitGroup
	wg.Go(func() {
		defer func() {
			if p := recover(); p != nil && p != any(r) {
				panic(p)
			}
		}()
		f(r)
	})
	wg.Wait()
	return r.failed
}

func TestAssertions(t *testing.T) {
	wrapped := fmt.Errorf("open: %w", fs.ErrNotExist)
	for _, tc := range []struct {
		name string
		f    func(tb testing.TB)
		want string
	}{
		{"NoError passes", func(tb testing.TB) { NoError(tb, nil) }, ""},
		{"NoError fails", func(tb testing.TB) { NoError(tb, errors.New("boom")) }, "unexpected error: boom"},
		{"NoError with context", func(tb testing.TB) { NoError(tb, errors.New("boom"), "Store(", 3, ")") }, "Store(3): unexpected error: boom"},
		{"ErrorIs passes", func(tb testing.TB) { ErrorIs(tb, wrapped, fs.ErrNotExist) }, ""},
		{"ErrorIs fails", func(tb testing.TB) { ErrorIs(tb, nil, fs.ErrNotExist, "Open") }, "Open: got error <nil>, want file does not exist"},
		{"Equal passes", func(tb testing.TB) { Equal(tb, 2, 2) }, ""},
		{"Equal fails", func(tb testing.TB) { Equal(tb, "a", "b") }, "got a, want b"},
		{"Equal with context", func(tb testing.TB) { Equal(tb, uint64(1), 2, "msgs") }, "msgs: got 1, want 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, tc.f); got != tc.want {
				t.Fatalf("failure %q, want %q", got, tc.want)
			}
		})
	}
}
