package mqttstate

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/subject"
)

// naiveMatch is the reference matcher: split both on '/', compare level
// by level.
func naiveMatch(filter, topic string) bool {
	f, t := strings.Split(filter, "/"), strings.Split(topic, "/")
	if strings.HasPrefix(topic, "$") && (f[0] == "+" || f[0] == "#") {
		return false
	}
	var rec func(f, t []string) bool
	rec = func(f, t []string) bool {
		switch {
		case len(f) == 0:
			return len(t) == 0
		case f[0] == "#":
			return true
		case len(t) == 0:
			return false
		case f[0] == "+" || f[0] == t[0]:
			return rec(f[1:], t[1:])
		}
		return false
	}
	return rec(f, t)
}

func TestMatch(t *testing.T) {
	cases := []struct {
		filter, topic string
		want          bool
	}{
		{"#", "a", true}, {"#", "a/b", true}, {"#", "/", true}, {"#", "$SYS/x", false},
		{"+", "a", true}, {"+", "a/b", false}, {"+", "", true}, {"+", "$x", false},
		{"+/+", "/", true}, {"/+", "/x", true}, {"+/#", "$a/b", false},
		{"a/#", "a", true}, {"a/#", "a/", true}, {"a/#", "ab", false},
		{"a/+/c", "a/b/c", true}, {"a/+/c", "a//c", true}, {"a/+/c", "a/b/c/d", false},
		{"$SYS/#", "$SYS/a", true}, {"$SYS/+", "$SYS", false}, {"a/b", "a/b/", false},
		{"a/b/", "a/b/", true}, {"a", "a/b", false}, {"a/b", "a", false},
	}
	for _, c := range cases {
		require.Equal(t, subject.MatchTopic(c.filter, c.topic), c.want, c.filter+" ~ "+c.topic)
		require.Equal(t, naiveMatch(c.filter, c.topic), c.want, "naive "+c.filter+" ~ "+c.topic)
	}
}

// FuzzRetained sets the retained messages of the topics (one per line) in
// a memory store and checks Retained(filter) against the naive matcher;
// Match itself is compared on every topic too.
func FuzzRetained(f *testing.F) {
	f.Add("a/+/c", "a/b/c\na/x/c\na/b\n$SYS/a")
	f.Add("#", "$SYS/x\n/\na\na/b/c/d")
	f.Add("+/+", "/\na/b\n$a/b\na")
	f.Add("a/#", "a\na/\nab\na/b/c")
	f.Add("$SYS/+", "$SYS/up\n$SYS\n$SYS/a/b")
	f.Add("+", "\n$\nx")
	f.Fuzz(func(t *testing.T, filter, topicList string) {
		s := open(t, Memory{}, Options{})
		var topics []string
		seen := map[string]bool{}
		for _, topic := range strings.Split(topicList, "\n") {
			if ValidTopic(topic) != nil || seen[topic] {
				continue
			}
			seen[topic] = true
			topics = append(topics, topic)
			require.NoError(t, s.SetRetained(topic, Msg{Payload: []byte("x")}))
		}
		check := func(held []string) {
			t.Helper()
			ms, err := s.Retained(filter)
			if ValidFilter(filter) != nil {
				require.ErrorIs(t, err, ErrInvalidFilter)
				return
			}
			require.NoError(t, err)
			var want, got []string
			for _, topic := range held {
				m := naiveMatch(filter, topic)
				if subject.MatchTopic(filter, topic) != m {
					t.Fatalf("subject.MatchTopic(%q, %q) = %v, naive %v", filter, topic, !m, m)
				}
				if m {
					want = append(want, topic)
				}
			}
			for _, m := range ms {
				got = append(got, m.Topic)
			}
			slices.Sort(want)
			require.DeepEqual(t, got, want, filter)
		}
		check(topics)
		// Clearing every other topic prunes the index.
		var held []string
		for i, topic := range topics {
			if i%2 == 0 {
				require.NoError(t, s.SetRetained(topic, Msg{}))
			} else {
				held = append(held, topic)
			}
		}
		check(held)
	})
}

// FuzzRecords feeds arbitrary bytes to the record decoders: an error or a
// value that encodes and decodes back to itself, never a panic.
func FuzzRecords(f *testing.F) {
	f.Add(appendMsg(nil, &Msg{Topic: "a/b", QoS: 2, Retain: true, Header: []byte{1, 2}, Payload: []byte("p"), Time: time.Unix(1, 2)}))
	f.Add(appendQueued(nil, &Msg{Topic: "q", QoS: 1}, 0x0102))
	f.Add(appendOut(nil, 513, true, 7))
	f.Add(encodeSession(&Session{ClientID: "c", Version: 5, Subs: []Sub{{Filter: "a/#", QoS: 1}}, Account: "A", User: "u"}))
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, pid, err := decodeQueued(b); err == nil {
			back, pid2, err := decodeQueued(appendQueued(nil, &m, pid))
			require.NoError(t, err)
			require.DeepEqual(t, back, m)
			require.Equal(t, pid2, pid)
		} else {
			require.ErrorIs(t, err, ErrCorrupt)
		}
		if pid, pubrec, n, err := decodeOut(b); err == nil {
			p2, r2, n2, err := decodeOut(appendOut(nil, pid, pubrec, n))
			require.NoError(t, err)
			require.Equal(t, [3]any{p2, r2, n2}, [3]any{pid, pubrec, n})
		}
		if s, err := decodeSession(b); err == nil {
			back, err := decodeSession(encodeSession(&s))
			require.NoError(t, err)
			require.DeepEqual(t, back, s)
		}
	})
}

// TestTriePrunes: removing every topic leaves an empty root, and removing
// a parent keeps its children.
func TestTriePrunes(t *testing.T) {
	var tr topicTrie
	for _, topic := range []string{"a/b/c", "a/b", "a", "/x", "$SYS/y"} {
		tr.insert(topic)
	}
	tr.remove("a/b")
	tr.remove("missing/topic")
	var got []string
	tr.match("a/#", func(topic string) { got = append(got, topic) })
	slices.Sort(got)
	require.DeepEqual(t, got, []string{"a", "a/b/c"})
	for _, topic := range []string{"a/b/c", "a", "/x", "$SYS/y"} {
		tr.remove(topic)
	}
	require.Equal(t, len(tr.root.children), 0)
}
