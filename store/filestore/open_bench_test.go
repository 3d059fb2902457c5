package filestore_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/store/filestore"
	"github.com/leafbox/leafbox/store/vfs"
)

// openHelperEnv names the stream directory a child test process opens for
// BenchmarkOpenLarge.
const openHelperEnv = "FILESTORE_OPEN_HELPER_DIR"

// BenchmarkOpenLarge writes a stream of FILESTORE_OPEN_MSGS messages of
// 128 B (default 1,000,000; 10,000,000 is the 512 MiB board's case, about
// 1.9 GB of disk and a few minutes) and opens it in a fresh process,
// reporting the open time and that process's peak RSS (VmHWM) and live
// heap. FILESTORE_OPEN_DIR keeps the stream between runs.
//
//	FILESTORE_OPEN_MSGS=10000000 go test -run XXX -bench OpenLarge -benchtime 1x ./store/filestore/
func BenchmarkOpenLarge(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("FILESTORE_OPEN_MSGS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	dir := os.Getenv("FILESTORE_OPEN_DIR")
	if dir == "" {
		dir = filepath.Join(b.TempDir(), "s")
	}
	s, err := filestore.Open(vfs.OS, dir, filestore.Config{SyncInterval: time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	for i := int(s.State().Msgs); i < n; i++ {
		if _, _, err := s.Store(fmt.Sprintf("sensors.%d.temp", i%1000), nil, benchPayload, 0); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		cmd := exec.Command(os.Args[0], "-test.run", "^TestOpenHelper$", "-test.v")
		cmd.Env = append(os.Environ(), openHelperEnv+"="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("helper: %v\n%s", err, out)
		}
		for sc := bufio.NewScanner(bytes.NewReader(out)); sc.Scan(); {
			f := strings.Fields(sc.Text())
			if len(f) == 3 && f[0] == "open-metric" {
				v, _ := strconv.ParseFloat(f[1], 64)
				b.ReportMetric(v, f[2])
			}
		}
	}
}

// TestOpenHelper is BenchmarkOpenLarge's child process; without its
// environment variable it checks only that a stream opens.
func TestOpenHelper(t *testing.T) {
	dir := os.Getenv(openHelperEnv)
	if dir == "" {
		dir = t.TempDir()
	}
	start := time.Now()
	s, err := filestore.Open(vfs.OS, dir, filestore.Config{SyncInterval: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	defer s.Close()
	if os.Getenv(openHelperEnv) == "" {
		return
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fmt.Printf("open-metric %.3f open-s\n", took.Seconds())
	fmt.Printf("open-metric %.1f heap-MiB\n", float64(ms.HeapAlloc)/(1<<20))
	fmt.Printf("open-metric %d msgs\n", s.State().Msgs)
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.SplitSeq(string(status), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && (f[0] == "VmHWM:" || f[0] == "VmRSS:") {
				kb, _ := strconv.ParseFloat(f[1], 64)
				fmt.Printf("open-metric %.1f %s\n", kb/1024, strings.ToLower(strings.TrimSuffix(f[0], ":"))+"-MiB")
			}
		}
	}
}
