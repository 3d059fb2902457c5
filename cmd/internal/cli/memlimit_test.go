package cli

import (
	"math"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// run sets the Go runtime's soft memory limit from memory_limit before it
// builds anything, and logs it; GOMEMLIMIT in the environment is left
// alone. Build fails here (the store directory is under a file), so that
// the test needs no running broker: the limit is set by then.
func TestRunAppliesMemoryLimit(t *testing.T) {
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })
	blocker := writeFile(t, "afile", "x")
	conf := func(limit string) string {
		return writeFile(t, "mem.yaml", "listen: 127.0.0.1:-1\nhttp_port: 0\nmemory_limit: "+limit+
			"\njetstream:\n  store_dir: "+filepath.Join(blocker, "js")+"\n")
	}

	t.Setenv("GOMEMLIMIT", "")
	debug.SetMemoryLimit(math.MaxInt64)
	_, stderr, code := runCLI(t, "run", "--config", conf("300MiB"))
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "memory limit", "limit=300MiB", "from=memory_limit", "is not a directory")
	if got := debug.SetMemoryLimit(-1); got != 300<<20 {
		t.Fatalf("memory limit after run: %d, want %d", got, 300<<20)
	}

	_, stderr, code = runCLI(t, "run", "--config", conf("0"))
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "memory limit off")
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Fatalf("memory limit after run with memory_limit 0: %d, want none", got)
	}

	t.Setenv("GOMEMLIMIT", "123MiB")
	debug.SetMemoryLimit(123 << 20)
	_, stderr, code = runCLI(t, "run", "--config", conf("300MiB"))
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, `from="GOMEMLIMIT=123MiB"`)
	if got := debug.SetMemoryLimit(-1); got != 123<<20 {
		t.Fatalf("memory limit with GOMEMLIMIT set: %d, want it untouched", got)
	}
}
