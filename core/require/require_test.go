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
		{"DeepEqual passes", func(tb testing.TB) { DeepEqual(tb, []string{"a"}, []string{"a"}) }, ""},
		{"DeepEqual follows pointers", func(tb testing.TB) { one, other := 1, 1; DeepEqual(tb, &one, &other) }, ""},
		{"DeepEqual fails", func(tb testing.TB) { DeepEqual(tb, []int{1}, []int{2}, "seqs") }, "seqs: got  []int{1}\nwant []int{2}"},
		{"DeepEqual tells nil from empty", func(tb testing.TB) { DeepEqual(tb, []int(nil), []int{}) }, "got  []int(nil)\nwant []int{}"},
		{"ErrorContains passes", func(tb testing.TB) { ErrorContains(tb, errors.New("config.yaml:3: bad port"), "config.yaml:3", "port") }, ""},
		{"ErrorContains fails on nil", func(tb testing.TB) { ErrorContains(tb, nil, "port") }, `got no error, want one containing ["port"]`},
		{"ErrorContains fails on a missing text", func(tb testing.TB) { ErrorContains(tb, errors.New("bad port"), "bad", "host") }, `error "bad port" does not contain "host"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, tc.f); got != tc.want {
				t.Fatalf("failure %q, want %q", got, tc.want)
			}
		})
	}
}
