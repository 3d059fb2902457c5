package node

import (
	"slices"
	"sync"
)

// Loop prevention. A message must reach a hub or the local broker by one
// path only, or it comes back and is stored or delivered twice:
//
//   - what an uplink captures reaches a hub only through the uplink (its
//     outbox, with a Nats-Msg-Id): every remote denies exporting it;
//   - the hub subjects a downlink consumes reach the gateway only through
//     the downlink (acked after local delivery): every remote denies
//     importing them;
//   - the local subjects a downlink delivers on neither come from a hub
//     by plain interest (another site's commands) nor go back to one
//     (where a stream could store them again): every remote denies
//     importing and exporting them;
//   - interest a link learned from its hub is never announced to a hub
//     again: the links' in-process connections form one leafConns set,
//     which every link's interest watch consults (leaf.Interest.Leaf).

// addLoopDenies adds the loop-prevention subjects of cfg's uplinks and
// downlinks to the deny lists of every remote, after the operator's own.
func addLoopDenies(cfg *Config) {
	var exports, imports []string
	for _, u := range cfg.Uplinks {
		exports = append(exports, u.Subjects...)
	}
	for i := range cfg.Downlinks {
		d := &cfg.Downlinks[i]
		for _, p := range d.LocalSubjects() {
			if p != ">" {
				exports = append(exports, p)
			}
		}
	}
	for i := range cfg.Downlinks {
		d := &cfg.Downlinks[i]
		imports = append(imports, d.FilterSubjects...)
		for _, p := range d.LocalSubjects() {
			if p != ">" && !slices.Contains(imports, p) {
				imports = append(imports, p)
			}
		}
	}
	for i := range cfg.Remotes {
		lc := &cfg.Remotes[i].Link
		lc.DenyImports = append(clone(lc.DenyImports), imports...)
		lc.DenyExports = append(clone(lc.DenyExports), exports...)
	}
}

// leafConns is the set of in-process connections that the links of one
// Node opened. Their subscriptions carry interest learned from a hub,
// which no link may announce to a hub again, and which does not count as
// a local receiver for a downlink.
type leafConns struct {
	m sync.Map // Conn → struct{}
}

func (s *leafConns) add(c Conn)    { s.m.Store(c, struct{}{}) }
func (s *leafConns) remove(c Conn) { s.m.Delete(c) }

// has reports whether c is one of the links' connections.
func (s *leafConns) has(c Conn) bool {
	if c == nil {
		return false
	}
	_, ok := s.m.Load(c)
	return ok
}
