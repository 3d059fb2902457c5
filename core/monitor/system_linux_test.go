package monitor

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

func TestParseMeminfo(t *testing.T) {
	total, avail := parseMeminfo([]byte("MemTotal:        1000 kB\nMemFree:          200 kB\nMemAvailable:     500 kB\nBuffers: x\nbroken line\n"))
	require.Equal(t, total, int64(1000*1024), "total")
	require.Equal(t, avail, int64(500*1024), "available")
	total, avail = parseMeminfo([]byte("nothing here\n"))
	require.Equal(t, total, int64(0), "total of nothing")
	require.Equal(t, avail, int64(0), "available of nothing")
}

func TestVarzSystem(t *testing.T) {
	f := newFixture()
	dir := t.TempDir()
	cfg := *f.varz.JetStream.Config
	cfg.StoreDir = dir
	f.varz.JetStream.Config = &cfg
	v := getStruct[Varz](t, newTestHandler(t, f), "/varz")
	if v.System == nil || v.System.Disk == nil {
		t.Fatalf("/varz system: %+v", v.System)
	}
	d := v.System.Disk
	require.Equal(t, d.Path, dir, "disk path")
	if d.Total == 0 || d.Available > d.Total {
		t.Errorf("disk: %+v", d)
	}
	if v.System.MemTotal <= 0 || v.System.MemAvailable <= 0 || v.System.MemAvailable > v.System.MemTotal {
		t.Errorf("memory: total %d, available %d", v.System.MemTotal, v.System.MemAvailable)
	}

	// A store directory that cannot be measured leaves the disk out;
	// without JetStream there is none to measure.
	cfg.StoreDir = dir + "/missing"
	v = getStruct[Varz](t, newTestHandler(t, f), "/varz")
	if v.System == nil || v.System.Disk != nil {
		t.Errorf("/varz system with a missing store directory: %+v", v.System)
	}
	f.varz.JetStream = JetStreamVarz{}
	v = getStruct[Varz](t, newTestHandler(t, f), "/varz")
	if v.System == nil || v.System.Disk != nil {
		t.Errorf("/varz system without JetStream: %+v", v.System)
	}

	// A provider's own value is kept.
	f.varz.System = &SystemVarz{MemTotal: 7}
	v = getStruct[Varz](t, newTestHandler(t, f), "/varz")
	require.Equal(t, *v.System, SystemVarz{MemTotal: 7}, "provider's system")
}

// /varz shows the Go runtime's soft memory limit while one is set, and
// leaves it out when there is none.
func TestVarzMemLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	f := newFixture()
	debug.SetMemoryLimit(300 << 20)
	v := getStruct[Varz](t, newTestHandler(t, f), "/varz")
	if v.System == nil {
		t.Fatal("/varz has no system object")
	}
	require.Equal(t, v.System.MemLimit, int64(300<<20), "mem_limit")
	debug.SetMemoryLimit(math.MaxInt64)
	v = getStruct[Varz](t, newTestHandler(t, f), "/varz")
	require.Equal(t, v.System.MemLimit, int64(0), "mem_limit with none")
}
