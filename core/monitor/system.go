package monitor

import (
	"math"
	"runtime/debug"
)

// SystemVarz is the system object of /varz, a leafbox extension: the
// headroom of the board leafbox runs on, for the status page and alerts.
// The monitor fills it when the provider leaves it nil, where the
// operating system tells (Linux); elsewhere it stays absent.
type SystemVarz struct {
	MemTotal     int64     `json:"mem_total,omitempty"`     // MemTotal is the board's physical memory in bytes.
	MemAvailable int64     `json:"mem_available,omitempty"` // MemAvailable is the memory available to new work without swapping (MemAvailable of /proc/meminfo).
	MemLimit     int64     `json:"mem_limit,omitempty"`     // MemLimit is the Go runtime's soft memory limit in bytes (debug.SetMemoryLimit, GOMEMLIMIT); absent when there is none.
	Disk         *DiskVarz `json:"disk,omitempty"`          // Disk is the file system holding the JetStream store directory; absent without one.
}

// ShedVarz is the shed object of /varz: leafbox refuses new work (new
// client connections, JetStream publishes) while the Go runtime's memory
// in use is over ShedAbove, until it is back under AcceptBelow.
type ShedVarz struct {
	Pressure           bool   `json:"pressure"`            // Pressure is true while new work is refused.
	ShedAbove          uint64 `json:"shed_above"`          // ShedAbove is the memory in use, in bytes, above which new work is refused.
	AcceptBelow        uint64 `json:"accept_below"`        // AcceptBelow is the memory in use, in bytes, under which new work is accepted again.
	Episodes           uint64 `json:"episodes"`            // Episodes counts the times pressure began.
	RefusedConnections uint64 `json:"refused_connections"` // RefusedConnections counts the client connections refused.
	RefusedPublishes   uint64 `json:"refused_publishes"`   // RefusedPublishes counts the JetStream publishes answered 503 "insufficient resources".
	Reclaims           uint64 `json:"reclaims"`            // Reclaims counts the idle reclaims: free heap returned to the kernel once a burst was over.
	ReclaimedBytes     uint64 `json:"reclaimed_bytes"`     // ReclaimedBytes is the free heap those reclaims found, in bytes.
}

// DiskVarz is the space of one file system.
type DiskVarz struct {
	Path      string `json:"path"`      // Path is the directory measured: the JetStream store directory.
	Total     uint64 `json:"total"`     // Total is the file system's size in bytes.
	Available uint64 `json:"available"` // Available is the space unprivileged writers may still use, in bytes.
}

// systemVarz measures the board: memory, and the file system holding
// storeDir when it is not empty. It returns nil when nothing is known.
func systemVarz(storeDir string) *SystemVarz {
	s := &SystemVarz{}
	s.MemTotal, s.MemAvailable = systemMemory()
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		s.MemLimit = limit
	}
	if storeDir != "" {
		if total, avail, ok := diskSpace(storeDir); ok {
			s.Disk = &DiskVarz{Path: storeDir, Total: total, Available: avail}
		}
	}
	if s.MemTotal == 0 && s.MemLimit == 0 && s.Disk == nil {
		return nil
	}
	return s
}
