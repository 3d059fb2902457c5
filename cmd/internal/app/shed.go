package app

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"github.com/leafbox/leafbox/core/monitor"
)

// Shedding thresholds, in percent of the soft memory limit: above
// ShedHighPercent of it the Go runtime's memory in use makes leafbox
// refuse new work; it accepts again once below ShedLowPercent. The gap
// to 100 % is for what is in flight when shedding starts, and the
// binary's own pages (about 12 MB), which count in RSS but not here.
const (
	ShedHighPercent = 80
	ShedLowPercent  = 65
)

// shedGCInterval is how often, under pressure, a garbage collection is
// forced to learn whether memory was freed (an idle broker allocates
// too little to start one itself).
const shedGCInterval = time.Second

// shedInterval is how often the shedder samples the runtime's memory.
const shedInterval = 50 * time.Millisecond

// shedder refuses new work while the Go runtime's memory nears the soft
// memory limit, so a burst meets errors instead of the OOM killer: new
// client connections get -ERR 'insufficient resources' and JetStream
// publishes 503/10023. Work already accepted goes on.
type shedder struct {
	high, low uint64 // bytes
	log       *slog.Logger

	pressure    atomic.Bool
	episodes    atomic.Uint64 // times pressure began
	connections atomic.Uint64 // connections refused
	publishes   atomic.Uint64 // JetStream publishes refused
	samples     []metrics.Sample
	lastGC      time.Time // sample's forced collection, under pressure

	// reclaim returns the free heap to the kernel once a burst is over
	// (reclaim.go).
	reclaim *reclaimer

	// onPressure, when set before run, is called as pressure begins
	// (true) and ends (false), on the sampling goroutine: the app
	// empties the file stores' index caches while under pressure.
	onPressure func(on bool)
}

// newShedder returns a shedder for the soft memory limit (bytes;
// math.MaxInt64 or less than 1 is none, and so is the shedder: nil).
func newShedder(limit int64, log *slog.Logger) *shedder {
	if limit <= 0 || limit == math.MaxInt64 {
		return nil
	}
	return &shedder{
		high:    uint64(limit) / 100 * ShedHighPercent,
		low:     uint64(limit) / 100 * ShedLowPercent,
		log:     log,
		reclaim: newReclaimer(),
		samples: []metrics.Sample{
			{Name: "/memory/classes/total:bytes"},
			{Name: "/memory/classes/heap/released:bytes"},
			{Name: "/memory/classes/heap/free:bytes"},
		},
	}
}

// inUse returns the memory the Go runtime holds for objects (live, or
// dead and not yet collected), stacks and its own structures: what it
// has mapped, less the free heap, returned to the kernel or not.
func (s *shedder) inUse() uint64 {
	metrics.Read(s.samples)
	return s.samples[0].Value.Uint64() - s.samples[1].Value.Uint64() - s.samples[2].Value.Uint64()
}

// run samples the memory until ctx ends.
func (s *shedder) run(ctx context.Context) {
	t := time.NewTicker(shedInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.sample()
			if !s.pressure.Load() {
				s.reclaim.look(now)
			}
		}
	}
}

// sample updates the pressure from one reading, with hysteresis.
func (s *shedder) sample() {
	used := s.inUse()
	on := s.pressure.Load()
	if on && used >= s.low && time.Since(s.lastGC) >= shedGCInterval {
		runtime.GC()
		s.lastGC = time.Now()
		used = s.inUse()
	}
	switch {
	case !on && used >= s.high:
		s.pressure.Store(true)
		s.episodes.Add(1)
		s.log.Warn("memory pressure: refusing new connections and JetStream publishes",
			"in_use", used, "shed_above", s.high, "accept_below", s.low)
		if s.onPressure != nil {
			s.onPressure(true)
		}
	case on && used < s.low:
		s.pressure.Store(false)
		s.log.Info("memory pressure over: accepting new work", "in_use", used,
			"refused_connections", s.connections.Load(), "refused_publishes", s.publishes.Load())
		if s.onPressure != nil {
			s.onPressure(false)
		}
	}
}

// refuseConnection is server.Options.RefuseConnection.
func (s *shedder) refuseConnection() bool {
	if !s.pressure.Load() {
		return false
	}
	s.connections.Add(1)
	return true
}

// refusePublish is jetstream.Config.RefusePublish.
func (s *shedder) refusePublish() bool {
	if !s.pressure.Load() {
		return false
	}
	s.publishes.Add(1)
	return true
}

// varz is the shed object of /varz.
func (s *shedder) varz() *monitor.ShedVarz {
	return &monitor.ShedVarz{
		Pressure:           s.pressure.Load(),
		ShedAbove:          s.high,
		AcceptBelow:        s.low,
		Episodes:           s.episodes.Load(),
		RefusedConnections: s.connections.Load(),
		RefusedPublishes:   s.publishes.Load(),
		Reclaims:           s.reclaim.count.Load(),
		ReclaimedBytes:     s.reclaim.freed.Load(),
	}
}

// shrinkIndexCaches is the shedder's onPressure: under pressure the file
// streams keep no index entries of sealed blocks beyond their summaries
// (a query loads them from the index file), after it their default cache.
func (a *App) shrinkIndexCaches(on bool) {
	limit := int64(0) // the store's default
	if on {
		limit = -1
	}
	n := a.js.SetIndexCaches(limit)
	a.log.Info("file stream index caches", "streams", n, "emptied", on)
}
