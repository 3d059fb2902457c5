package monitor

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// cpuSampleInterval is the shortest wall-clock window over which the CPU
// percentage is measured; requests arriving faster reuse the last value.
const cpuSampleInterval = time.Second

// processSampler measures the process's CPU use between successive /varz
// requests, as nats-server's pse package does periodically.
type processSampler struct {
	mu       sync.Mutex
	lastWall time.Time
	lastCPU  time.Duration
	percent  float64
}

// newProcessSampler starts a sampler whose first window begins now.
func newProcessSampler(now time.Time) *processSampler {
	cpu, _ := cpuTime()
	return &processSampler{lastWall: now, lastCPU: cpu}
}

// cpuPercent returns the CPU time used per wall-clock time, in percent of
// one core, over the window ending now.
func (s *processSampler) cpuPercent(now time.Time) float64 {
	cpu, ok := cpuTime()
	if !ok {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	wall := now.Sub(s.lastWall)
	if wall < cpuSampleInterval {
		return s.percent
	}
	p := float64(cpu-s.lastCPU) / float64(wall) * 100
	// One decimal place, like nats-server.
	s.percent = math.Round(p*10) / 10
	s.lastWall, s.lastCPU = now, cpu
	return s.percent
}

// fill sets the process fields of v that the provider left zero.
func (s *processSampler) fill(v *Varz, now time.Time) {
	if v.GoVersion == "" {
		v.GoVersion = runtime.Version()
	}
	if v.Cores == 0 {
		v.Cores = runtime.NumCPU()
	}
	if v.MaxProcs == 0 {
		v.MaxProcs = runtime.GOMAXPROCS(0)
	}
	if v.MemLimit == 0 {
		if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 {
			v.MemLimit = limit
		}
	}
	if v.Mem == 0 {
		v.Mem = residentMemory()
	}
	if v.CPU == 0 {
		v.CPU = s.cpuPercent(now)
	}
}

// residentMemory returns the process's resident set size in bytes. Where
// /proc is unavailable it falls back to the memory the Go runtime has
// mapped and not returned to the operating system.
func residentMemory() int64 {
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		// statm holds sizes in pages: total resident shared text lib data dt.
		fields := strings.Fields(string(b))
		if len(fields) > 1 {
			if pages, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				return pages * int64(os.Getpagesize())
			}
		}
	}
	samples := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(samples)
	var total, released uint64
	if samples[0].Value.Kind() == metrics.KindUint64 {
		total = samples[0].Value.Uint64()
	}
	if samples[1].Value.Kind() == metrics.KindUint64 {
		released = samples[1].Value.Uint64()
	}
	if released > total {
		return 0
	}
	return int64(total - released)
}
