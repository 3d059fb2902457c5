// Package require holds the few assertions leafbox's tests share: each
// fails the test at once (t.Fatalf) with what it got and what it wanted,
// after an optional context (fmt.Sprint of the trailing arguments, such as
// the operation that was checked).
//
// Only _test.go files and test-support packages (storetest, servertest and
// the like) import it; scripts/check-imports refuses it in anything else.
package require

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// NoError fails t unless err is nil.
func NoError(t testing.TB, err error, what ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%sunexpected error: %v", prefix(what), err)
	}
}

// ErrorIs fails t unless errors.Is(err, target).
func ErrorIs(t testing.TB, err, target error, what ...any) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%sgot error %v, want %v", prefix(what), err, target)
	}
}

// Equal fails t unless got == want.
func Equal[T comparable](t testing.TB, got, want T, what ...any) {
	t.Helper()
	if got != want {
		t.Fatalf("%sgot %v, want %v", prefix(what), got, want)
	}
}

// DeepEqual fails t unless reflect.DeepEqual(got, want), for values ==
// cannot compare (slices, maps, structs holding them) or whose pointers
// are compared by what they point at. Both are printed with %#v.
func DeepEqual[T any](t testing.TB, got, want T, what ...any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%sgot  %#v\nwant %#v", prefix(what), got, want)
	}
}

// ErrorContains fails t unless err is non-nil and its message contains
// every one of wants. It takes no context: the wanted texts say what was
// checked.
func ErrorContains(t testing.TB, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", wants)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not contain %q", err, w)
		}
	}
}

// prefix renders the context of a failure as "context: ", or "" without
// one.
func prefix(what []any) string {
	if len(what) == 0 {
		return ""
	}
	return fmt.Sprint(what...) + ": "
}
