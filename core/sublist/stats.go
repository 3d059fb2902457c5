package sublist

import "math"

// Stats is a point-in-time summary of a Sublist, shaped for the /subsz
// monitoring endpoint.
type Stats struct {
	// NumSubs is the number of entries (Count).
	NumSubs uint32
	// NumCache is the number of subjects in the match cache.
	NumCache uint32
	// NumInserts is the number of successful Insert calls.
	NumInserts uint64
	// NumRemoves is the number of entries removed, by Remove or
	// RemoveBatch.
	NumRemoves uint64
	// NumMatches is the number of Match and MatchBytes calls.
	NumMatches uint64
	// CacheHitRate is the fraction of matches answered from the cache.
	CacheHitRate float64
	// MaxFanout is the largest fanout among cached results, where fanout
	// counts one per plain value and one per queue group.
	MaxFanout uint32
	// AvgFanout is the mean fanout of cached results.
	AvgFanout float64
}

// Stats returns the current statistics. It walks the cache, so it costs
// O(cache size); it is meant for monitoring, not the hot path.
func (s *Sublist[T]) Stats() Stats {
	hits, misses := s.cacheHits.Load(), s.cacheMisses.Load()
	st := Stats{
		NumSubs:    clampUint32(s.Count()),
		NumInserts: s.inserts.Load(),
		NumRemoves: s.removes.Load(),
		NumMatches: hits + misses,
	}
	if st.NumMatches > 0 {
		st.CacheHitRate = float64(hits) / float64(st.NumMatches)
	}
	s.cacheMu.RLock()
	total, largest := 0, 0
	for _, r := range s.cache {
		f := r.fanout()
		total += f
		largest = max(largest, f)
	}
	st.NumCache = clampUint32(len(s.cache))
	s.cacheMu.RUnlock()
	st.MaxFanout = clampUint32(largest)
	if st.NumCache > 0 {
		st.AvgFanout = float64(total) / float64(st.NumCache)
	}
	return st
}

func clampUint32(n int) uint32 { return uint32(min(uint64(n), math.MaxUint32)) }
