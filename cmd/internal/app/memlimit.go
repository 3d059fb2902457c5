package app

import (
	"bufio"
	"bytes"
	"log/slog"
	"math"
	"os"
	"path"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/leafbox/leafbox/cmd/internal/config"
)

// MemoryLimitPercent is the share of the board's memory (or its cgroup's
// limit, when smaller) that the Go runtime's soft memory limit is set to
// when the configuration leaves memory_limit unset. The rest is for the
// kernel, the page cache the store reads through, and other processes.
const MemoryLimitPercent = 70

// cgroupUnlimited is the smallest cgroup v1 memory.limit_in_bytes taken
// as "no limit": v1 reports none as the largest page-aligned int64.
const cgroupUnlimited = 1 << 60

// readFileFunc reads one file; os.ReadFile, or a map in tests.
type readFileFunc func(name string) ([]byte, error)

// boardMemory returns the memory leafbox may use in bytes and where that
// comes from: the smaller of the board's MemTotal (/proc/meminfo) and the
// tightest memory limit of its cgroup and the cgroup's ancestors (v2
// memory.max, v1 memory.limit_in_bytes; "max" and v1's huge values mean
// none). 0 and "" when neither is known.
func boardMemory(read readFileFunc) (bytes int64, source string) {
	if b, err := read("/proc/meminfo"); err == nil {
		if total := meminfoTotal(b); total > 0 {
			bytes, source = total, "MemTotal of /proc/meminfo"
		}
	}
	if limit, file := cgroupLimit(read); limit > 0 && (bytes == 0 || limit < bytes) {
		bytes, source = limit, file
	}
	return bytes, source
}

// meminfoTotal returns MemTotal of /proc/meminfo in bytes, or 0.
func meminfoTotal(b []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || n <= 0 {
			return 0
		}
		if len(f) > 1 && f[1] == "kB" {
			n *= 1024
		}
		return n
	}
	return 0
}

// cgroupLimit returns the tightest memory limit over this process's
// cgroup and its ancestors, and the file it is in; 0 when there is none.
// Paths missing under /sys/fs/cgroup (a cgroup namespace shows "/") are
// skipped, so the namespace's root is still read.
func cgroupLimit(read readFileFunc) (limit int64, file string) {
	b, err := read("/proc/self/cgroup")
	if err != nil {
		return 0, ""
	}
	consider := func(name string, v1 bool) {
		data, err := read(name)
		if err != nil {
			return
		}
		s := strings.TrimSpace(string(data))
		if s == "max" || s == "" {
			return
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || (v1 && n >= cgroupUnlimited) {
			return
		}
		if limit == 0 || n < limit {
			limit, file = n, name
		}
	}
	walk := func(root, cg, leaf string, v1 bool) {
		for dir := path.Clean("/" + cg); ; dir = path.Dir(dir) {
			consider(path.Join(root, dir, leaf), v1)
			if dir == "/" {
				return
			}
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case parts[0] == "0" && parts[1] == "":
			walk("/sys/fs/cgroup", parts[2], "memory.max", false)
		case hasController(parts[1], "memory"):
			walk("/sys/fs/cgroup/memory", parts[2], "memory.limit_in_bytes", true)
		}
	}
	return limit, file
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// memoryLimitPlan is the soft memory limit run sets: Limit bytes
// (math.MaxInt64 is off), or none when Keep says the environment's
// GOMEMLIMIT stays; Reason says where it comes from, for the log.
type memoryLimitPlan struct {
	Limit  int64
	Keep   bool
	Reason string
}

// planMemoryLimit decides the soft memory limit from the environment's
// GOMEMLIMIT (goMemLimit, "" when unset), the configuration and the
// board. A derived limit is rounded down to whole MiB, and is never under
// config.MinMemoryLimit.
func planMemoryLimit(goMemLimit string, cfg *config.Config, read readFileFunc) memoryLimitPlan {
	if goMemLimit != "" {
		return memoryLimitPlan{Keep: true, Reason: "GOMEMLIMIT=" + goMemLimit}
	}
	if limit, auto := cfg.MemoryLimitSetting(); !auto {
		if limit == 0 {
			return memoryLimitPlan{Limit: math.MaxInt64, Reason: "memory_limit: 0 (off)"}
		}
		return memoryLimitPlan{Limit: limit, Reason: "memory_limit"}
	}
	board, source := boardMemory(read)
	if board == 0 {
		return memoryLimitPlan{Limit: math.MaxInt64, Reason: "board memory unknown (off)"}
	}
	return memoryLimitPlan{
		Limit:  max(board/100*MemoryLimitPercent&^(1<<20-1), config.MinMemoryLimit),
		Reason: strconv.Itoa(MemoryLimitPercent) + "% of " + config.Size(board).String() + " (" + source + ")",
	}
}

// ApplyMemoryLimit sets the Go runtime's soft memory limit
// (debug.SetMemoryLimit) for `leafbox run`: GOMEMLIMIT in the environment
// is left as it is; else memory_limit, else MemoryLimitPercent of the
// board's memory or its cgroup's limit, whichever is smaller. It logs the
// limit in force and returns it (math.MaxInt64 is none).
func ApplyMemoryLimit(cfg *config.Config, log *slog.Logger) int64 {
	plan := planMemoryLimit(os.Getenv("GOMEMLIMIT"), cfg, os.ReadFile)
	limit := debug.SetMemoryLimit(-1)
	if !plan.Keep {
		debug.SetMemoryLimit(plan.Limit)
		limit = plan.Limit
	}
	if limit == math.MaxInt64 {
		log.Info("memory limit off", "from", plan.Reason)
	} else {
		log.Info("memory limit", "limit", config.Size(limit).String(), "bytes", limit, "from", plan.Reason)
	}
	return limit
}
