package app

import (
	"io/fs"
	"math"
	"testing"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/core/require"
)

// files reads from a map, fs.ErrNotExist for what it lacks.
func files(m map[string]string) readFileFunc {
	return func(name string) ([]byte, error) {
		s, ok := m[name]
		if !ok {
			return nil, fs.ErrNotExist
		}
		return []byte(s), nil
	}
}

const meminfo1G = "MemTotal:        1048576 kB\nMemFree:          200 kB\n"

func TestBoardMemory(t *testing.T) {
	const v2 = "0::/system.slice/leafbox.service\n"
	const v1 = "4:memory:/system.slice/leafbox.service\n3:cpu,cpuacct:/\n"
	cases := []struct {
		name   string
		files  map[string]string
		bytes  int64
		source string
	}{
		{"nothing readable", nil, 0, ""},
		{"meminfo only", map[string]string{"/proc/meminfo": meminfo1G}, 1 << 30, "MemTotal of /proc/meminfo"},
		{"meminfo without MemTotal", map[string]string{"/proc/meminfo": "MemFree: 1 kB\n"}, 0, ""},
		{"v2 max", map[string]string{"/proc/meminfo": meminfo1G, "/proc/self/cgroup": v2,
			"/sys/fs/cgroup/system.slice/leafbox.service/memory.max": "max\n"}, 1 << 30, "MemTotal of /proc/meminfo"},
		{"v2 limit", map[string]string{"/proc/meminfo": meminfo1G, "/proc/self/cgroup": v2,
			"/sys/fs/cgroup/system.slice/leafbox.service/memory.max": "268435456\n"},
			256 << 20, "/sys/fs/cgroup/system.slice/leafbox.service/memory.max"},
		{"v2 parent tighter", map[string]string{"/proc/meminfo": meminfo1G, "/proc/self/cgroup": v2,
			"/sys/fs/cgroup/system.slice/leafbox.service/memory.max": "268435456\n",
			"/sys/fs/cgroup/system.slice/memory.max":                 "134217728\n"},
			128 << 20, "/sys/fs/cgroup/system.slice/memory.max"},
		{"v2 limit above the board", map[string]string{"/proc/meminfo": meminfo1G, "/proc/self/cgroup": v2,
			"/sys/fs/cgroup/system.slice/leafbox.service/memory.max": "4294967296\n"}, 1 << 30, "MemTotal of /proc/meminfo"},
		{"v2 files missing", map[string]string{"/proc/meminfo": meminfo1G, "/proc/self/cgroup": v2}, 1 << 30, "MemTotal of /proc/meminfo"},
		{"v2 garbage", map[string]string{"/proc/meminfo": meminfo1G, "/proc/self/cgroup": v2,
			"/sys/fs/cgroup/system.slice/leafbox.service/memory.max": "lots\n"}, 1 << 30, "MemTotal of /proc/meminfo"},
		{"v2 namespace root", map[string]string{"/proc/meminfo": meminfo1G, "/proc/self/cgroup": "0::/\n",
			"/sys/fs/cgroup/memory.max": "536870912\n"}, 512 << 20, "/sys/fs/cgroup/memory.max"},
		{"v1 unlimited", map[string]string{"/proc/meminfo": meminfo1G, "/proc/self/cgroup": v1,
			"/sys/fs/cgroup/memory/system.slice/leafbox.service/memory.limit_in_bytes": "9223372036854771712\n"},
			1 << 30, "MemTotal of /proc/meminfo"},
		{"v1 limit", map[string]string{"/proc/meminfo": meminfo1G, "/proc/self/cgroup": v1,
			"/sys/fs/cgroup/memory/system.slice/leafbox.service/memory.limit_in_bytes": "402653184\n"},
			384 << 20, "/sys/fs/cgroup/memory/system.slice/leafbox.service/memory.limit_in_bytes"},
		{"v1 path outside the namespace", map[string]string{"/proc/meminfo": meminfo1G, "/proc/self/cgroup": "4:memory:/docker/abc\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "402653184\n"},
			384 << 20, "/sys/fs/cgroup/memory/memory.limit_in_bytes"},
		{"cgroup without meminfo", map[string]string{"/proc/self/cgroup": v2,
			"/sys/fs/cgroup/system.slice/leafbox.service/memory.max": "268435456\n"},
			256 << 20, "/sys/fs/cgroup/system.slice/leafbox.service/memory.max"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bytes, source := boardMemory(files(tc.files))
			require.Equal(t, bytes, tc.bytes, "bytes")
			require.Equal(t, source, tc.source, "source")
		})
	}
}

func TestPlanMemoryLimit(t *testing.T) {
	size := func(s config.Size) *config.Size { return &s }
	board := files(map[string]string{"/proc/meminfo": meminfo1G})
	cases := []struct {
		name  string
		env   string
		limit *config.Size
		read  readFileFunc
		want  memoryLimitPlan
	}{
		{"derived", "", nil, board, memoryLimitPlan{Limit: 716 << 20, Reason: "70% of 1GiB (MemTotal of /proc/meminfo)"}},
		{"configured", "", size(256 << 20), board, memoryLimitPlan{Limit: 256 << 20, Reason: "memory_limit"}},
		{"configured off", "", size(0), board, memoryLimitPlan{Limit: math.MaxInt64, Reason: "memory_limit: 0 (off)"}},
		{"GOMEMLIMIT wins", "100MiB", size(256 << 20), board, memoryLimitPlan{Keep: true, Reason: "GOMEMLIMIT=100MiB"}},
		{"board unknown", "", nil, files(nil), memoryLimitPlan{Limit: math.MaxInt64, Reason: "board memory unknown (off)"}},
		{"tiny board", "", nil, files(map[string]string{"/proc/meminfo": "MemTotal: 8192 kB\n"}),
			memoryLimitPlan{Limit: config.MinMemoryLimit, Reason: "70% of 8MiB (MemTotal of /proc/meminfo)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &config.Config{MemoryLimit: tc.limit}
			require.Equal(t, planMemoryLimit(tc.env, cfg, tc.read), tc.want, "plan")
		})
	}
}
