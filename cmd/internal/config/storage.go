package config

import (
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"

	"golang.org/x/sys/unix"
)

// The JetStream limits' defaults follow nats-server's rule: a share of the
// machine's memory (or of GOMEMLIMIT when that is lower) and a share of
// the store's file system as found at start, with nats-server's fallbacks
// when the machine cannot be read.
const (
	// storageSharePercent is the share of memory and of disk space that
	// JetStream may use by default.
	storageSharePercent = 75
	// fallbackMaxMemory is max_memory_store when the memory size is
	// unknown (nats-server's JetStreamMaxMemDefault).
	fallbackMaxMemory = 256 << 20
	// fallbackMaxFile is max_file_store when the file system cannot be
	// read (nats-server's JetStreamMaxStoreDefault).
	fallbackMaxFile = 1 << 40
	// minMaxFile is the smallest default max_file_store: 0 would mean
	// unlimited to the engine, so a disk with no room left still gets a
	// limit, and the note says why streams store nothing.
	minMaxFile = 1
)

// Machine is what the machine contributes to the JetStream limits'
// defaults. Only OSMachine reads the real machine, so tests pass their own.
type Machine struct {
	// Memory is the physical memory in bytes; 0 if unknown.
	Memory int64
	// MemoryLimit is the Go runtime's soft memory limit (GOMEMLIMIT); 0
	// if none.
	MemoryLimit int64
	// Disk reads the file system that holds dir (or would hold it, for a
	// dir not yet created); nil, or an error, means unknown.
	Disk func(dir string) (DiskSpace, error)
}

// DiskSpace describes the file system of the store directory at start.
type DiskSpace struct {
	// Size is the file system's size in bytes.
	Size int64
	// Avail is the space available to unprivileged writers.
	Avail int64
	// Used is the space the streams already hold (files under the streams
	// directory): it counts as theirs, so a restart with full streams does
	// not shrink their limit below what they hold.
	Used int64
}

// OSMachine reads the machine leafbox runs on.
func OSMachine() Machine {
	m := Machine{Disk: osDiskSpace}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		m.Memory = int64(si.Totalram) * int64(si.Unit)
	}
	if limit := debug.SetMemoryLimit(-1); limit != math.MaxInt64 {
		m.MemoryLimit = limit
	}
	return m
}

// osDiskSpace reads the file system of dir, or of its nearest existing
// ancestor when dir does not exist yet; it creates nothing.
func osDiskSpace(dir string) (DiskSpace, error) {
	at := existingAncestor(dir)
	var st unix.Statfs_t
	if err := unix.Statfs(at, &st); err != nil {
		return DiskSpace{}, err
	}
	ds := DiskSpace{Size: int64(st.Blocks) * int64(st.Bsize), Avail: int64(st.Bavail) * int64(st.Bsize)}
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable parts count as empty
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				ds.Used += info.Size()
			}
		}
		return nil
	})
	return ds, nil
}

// existingAncestor returns dir, or its nearest ancestor that exists.
func existingAncestor(dir string) string {
	for {
		if _, err := os.Stat(dir); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// storageLimits are the JetStream limits' defaults with how they were
// reached, for config check and config print.
type storageLimits struct {
	maxMemory, maxFile   int64
	memoryNote, fileNote string
}

// defaultStorageLimits computes max_memory_store and max_file_store from
// the machine: storageSharePercent of the memory (GOMEMLIMIT when lower)
// and of the space the streams may have on the file system of streams
// (what is available plus what they already hold, at most the same share
// of the file system's size), less reserve, the uplinks' min_free_disk,
// which streams must never eat. This is the only place these defaults are
// computed.
func defaultStorageLimits(m Machine, streams string, reserve int64) storageLimits {
	var l storageLimits
	mem, what := m.Memory, "memory"
	if m.MemoryLimit > 0 && (mem <= 0 || m.MemoryLimit < mem) {
		mem, what = m.MemoryLimit, "GOMEMLIMIT"
	}
	if mem > 0 {
		l.maxMemory = share(mem)
		l.memoryNote = fmt.Sprintf("%d%% of %v of %s", storageSharePercent, bytesText(mem), what)
	} else {
		l.maxMemory = fallbackMaxMemory
		l.memoryNote = "memory size unknown"
	}

	var ds DiskSpace
	err := fmt.Errorf("no reading")
	if m.Disk != nil {
		ds, err = m.Disk(streams)
	}
	if err != nil {
		l.maxFile = fallbackMaxFile
		l.fileNote = fmt.Sprintf("file system of %s unknown (%v)", streams, err)
	} else {
		l.maxFile = share(ds.Avail + ds.Used)
		l.fileNote = fmt.Sprintf("%d%% of %v available on the file system of %s", storageSharePercent, bytesText(ds.Avail), streams)
		if ds.Used > 0 {
			l.fileNote += fmt.Sprintf(" plus the %v its streams hold", bytesText(ds.Used))
		}
		if ds.Size > 0 && l.maxFile > share(ds.Size) {
			l.maxFile = share(ds.Size)
			l.fileNote = fmt.Sprintf("%d%% of the %v file system of %s", storageSharePercent, bytesText(ds.Size), streams)
		}
	}
	if reserve > 0 {
		l.maxFile -= reserve
		l.fileNote += fmt.Sprintf(", less the %v the uplinks' min_free_disk keeps free", bytesText(reserve))
	}
	if l.maxFile < minMaxFile {
		l.maxFile = minMaxFile
		l.fileNote += ": no room left for streams"
	}
	return l
}

// share returns storageSharePercent (three quarters) of n, computed as
// nats-server does.
func share(n int64) int64 { return n / 4 * 3 }

// uplinkDiskReserve is the free space the uplinks keep on the store's file
// system: the largest min_free_disk of the uplinks (each defaults to
// DefaultMinFreeDisk); 0 without uplinks.
func (c *Config) uplinkDiskReserve() int64 {
	var reserve int64
	for _, u := range c.Uplinks {
		r := int64(u.MinFreeDisk)
		if r == 0 {
			r = DefaultMinFreeDisk
		}
		reserve = max(reserve, r)
	}
	return reserve
}

// StreamsDir is where JetStream keeps its file streams (LAYOUT:
// <store_dir>/streams). It is the one place that names the path.
func (c *Config) StreamsDir() string { return c.Layout().Streams() }

// OutboxesDir is where the uplinks keep their outboxes (LAYOUT:
// <store_dir>/outbox). It is the one place that names the path.
func (c *Config) OutboxesDir() string { return c.Layout().Outboxes() }

// setStorageDefaults fills max_memory_store and max_file_store from the
// machine when JetStream is on and they are unset, and records how.
func (c *Config) setStorageDefaults(m Machine) {
	js := c.JetStream
	c.storageNotes = nil
	if js == nil || !js.Enabled || js.StoreDir == "" {
		return
	}
	reserve := c.uplinkDiskReserve()
	l := defaultStorageLimits(m, c.StreamsDir(), reserve)
	if js.MaxMemoryStore == 0 {
		js.MaxMemoryStore = Size(l.maxMemory)
		c.storageNotes = append(c.storageNotes, fmt.Sprintf("max_memory_store %s: default, %s", bytesText(l.maxMemory), l.memoryNote))
	} else {
		c.storageNotes = append(c.storageNotes, fmt.Sprintf("max_memory_store %s: set", bytesText(int64(js.MaxMemoryStore))))
	}
	if js.MaxFileStore == 0 {
		js.MaxFileStore = Size(l.maxFile)
		c.storageNotes = append(c.storageNotes, fmt.Sprintf("max_file_store %s: default, %s", bytesText(l.maxFile), l.fileNote))
	} else {
		note := fmt.Sprintf("max_file_store %s: set", bytesText(int64(js.MaxFileStore)))
		if reserve > 0 {
			note += fmt.Sprintf("; keep it below the disk space less the %v the uplinks' min_free_disk keeps free", bytesText(reserve))
		}
		c.storageNotes = append(c.storageNotes, note)
	}
}

// StorageSummary describes where streams and outboxes live and the
// JetStream limits with how their defaults were reached, one line each,
// for config check and config print.
func (c *Config) StorageSummary() []string {
	var lines []string
	if js := c.JetStream; js != nil && js.Enabled {
		lines = append(lines, "jetstream on: streams in "+c.StreamsDir())
	} else {
		lines = append(lines, "jetstream off")
	}
	if len(c.Uplinks) > 0 {
		lines = append(lines, "uplink outboxes in "+c.OutboxesDir())
	}
	return append(lines, c.storageNotes...)
}

// bytesText formats n for people: whole units exactly (64MiB), anything
// else to one decimal (17.7GiB).
func bytesText(n int64) string {
	units := []struct {
		name string
		mult int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if n >= u.mult {
			if n%u.mult == 0 {
				return fmt.Sprintf("%d%s", n/u.mult, u.name)
			}
			return fmt.Sprintf("%.1f%s", float64(n)/float64(u.mult), u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}
