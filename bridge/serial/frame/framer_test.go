package frame

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// event is one result of Next, kept: a frame's data (and fix) or an error.
type event struct {
	data, sentence, fix string
	err                 error
}

func (e event) String() string {
	if e.err != nil {
		return "error: " + e.err.Error()
	}
	return fmt.Sprintf("%q %s %s", e.data, e.sentence, e.fix)
}

// collect feeds each chunk to f and drains it after each.
func collect(f Framer, chunks ...[]byte) []event {
	var evs []event
	for _, c := range chunks {
		f.Feed(c)
		for {
			fr, ok, err := f.Next()
			if err != nil {
				evs = append(evs, event{err: err})
				continue
			}
			if !ok {
				break
			}
			evs = append(evs, event{data: string(fr.Data), sentence: fr.Sentence, fix: string(fr.Fix)})
		}
	}
	return evs
}

// sameEvents compares two event lists: frames equal, errors in the same
// places.
func sameEvents(a, b []event) bool {
	return slices.EqualFunc(a, b, func(x, y event) bool {
		if (x.err == nil) != (y.err == nil) {
			return false
		}
		return x.err != nil || x == y
	})
}

func requireEvents(t *testing.T, got []event, want ...string) {
	t.Helper()
	var g []string
	for _, e := range got {
		if e.err != nil {
			var fe *Error
			if !errors.As(e.err, &fe) {
				t.Fatalf("error %v is not a *frame.Error", e.err)
			}
			g = append(g, "!"+strings.TrimPrefix(fe.Reason.Error(), "frame: "))
			continue
		}
		g = append(g, e.data)
	}
	if !slices.Equal(g, want) {
		t.Fatalf("events\n got  %q\n want %q", g, want)
	}
}

// checkSplit requires that feeding b at once and in two parts split at
// cut yield the same events.
func checkSplit(t *testing.T, newFramer func() Framer, b []byte, cut int) {
	t.Helper()
	whole := collect(newFramer(), b)
	cut = min(max(cut, 0), len(b))
	parts := collect(newFramer(), b[:cut], b[cut:])
	if !sameEvents(whole, parts) {
		t.Fatalf("input %q split at %d:\n whole %v\n parts %v", b, cut, whole, parts)
	}
	bytewise := make([][]byte, len(b))
	for i := range b {
		bytewise[i] = b[i : i+1]
	}
	if one := collect(newFramer(), bytewise...); !sameEvents(whole, one) {
		t.Fatalf("input %q byte by byte:\n whole %v\n bytes %v", b, whole, one)
	}
}

// checkRoundTrip requires that a message Encode accepts comes back from
// Next unchanged, as the only event; an empty line is sent (a bare
// newline) but, like every empty line, not received.
func checkRoundTrip(t *testing.T, f Framer, msg []byte) {
	t.Helper()
	enc, err := f.Encode(nil, msg)
	if err != nil {
		return
	}
	if _, lines := f.(*Lines); lines && len(msg) == 0 {
		if evs := collect(f, enc); len(evs) != 0 {
			t.Fatalf("empty line %q came back as %v", enc, evs)
		}
		return
	}
	evs := collect(f, enc)
	if len(evs) != 1 || evs[0].err != nil || evs[0].data != string(msg) {
		t.Fatalf("message %q encoded as %q came back as %v", msg, enc, evs)
	}
}
