package subject

import (
	"maps"
	"sync"
	"sync/atomic"
)

// MaxNames bounds the subjects a Names remembers: a gateway or a stream
// sees a bounded set of subjects again and again, and a subject beyond
// the first MaxNames distinct ones costs one allocation each time.
const MaxNames = 1024

// Names turns subjects given as bytes (as the broker hands them to a
// subscriber) into strings, allocating each of the first MaxNames
// distinct ones once, for the hot paths that need a string to keep or
// pass on. The zero value is ready; it is safe for concurrent use.
//
// A lookup takes no lock: the map is replaced, never changed, so a reader
// reads a map no one writes. Learning a subject copies the map (at most
// MaxNames entries), a cost paid once per subject of a bounded set. mu
// serializes the writers and is held alone.
type Names struct {
	names atomic.Pointer[map[string]string]
	mu    sync.Mutex
}

// Name returns subj as a string, without allocating when subj is one of
// the remembered subjects. subj is only read.
func (n *Names) Name(subj []byte) string {
	if m := n.names.Load(); m != nil {
		if s, ok := (*m)[string(subj)]; ok {
			return s
		}
		if len(*m) >= MaxNames {
			return string(subj) // full: no lock for the subjects beyond it
		}
	}
	s := string(subj)
	n.mu.Lock()
	defer n.mu.Unlock()
	old := n.names.Load()
	if old == nil {
		n.names.Store(&map[string]string{s: s})
		return s
	}
	if prev, ok := (*old)[s]; ok {
		return prev // another writer added it
	}
	if len(*old) >= MaxNames {
		return s
	}
	m := maps.Clone(*old)
	m[s] = s
	n.names.Store(&m)
	return s
}
