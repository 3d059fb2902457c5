package jetstream

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// The kill -9 tests run the engine in a child process: the test binary
// again, running the same test function with childEnv naming the store
// directory. The child serves on a broker of its own, prints its client
// URL and waits to be killed; the parent kills it with SIGKILL and starts
// another on the same store.
const childEnv = "LEAFBOX_TEST_ENGINE_CHILD"

// serveAsChild serves the engine and reports true when the test runs as
// a child (and must return at once); otherwise it reports false.
func serveAsChild(t *testing.T) bool {
	dir := os.Getenv(childEnv)
	if dir == "" {
		return false
	}
	// Sync always (the default): a kill -9 then loses no stored message,
	// which buffering on an interval would.
	env := newTestEnv(t, Config{StoreDir: dir})
	fmt.Printf("URL=%s\n", env.srv.ClientURL())
	<-time.After(time.Minute) // the parent kills it long before
	return true
}

// startChild starts the running test as a child serving the store in dir
// and returns it and its client URL once it serves; it is killed in
// t.Cleanup.
func startChild(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "URL="); ok {
			go func() { // keep the pipe drained
				for sc.Scan() {
				}
			}()
			return cmd, u
		}
	}
	t.Fatalf("child exited without serving: %v\n%s", sc.Err(), stderr.String())
	return nil, ""
}

// compareTranscripts fails t at each line where leafbox's transcript of
// a side-by-side scenario differs from nats-server's.
func compareTranscripts(t *testing.T, ref, got []string) {
	t.Helper()
	for i := range max(len(ref), len(got)) {
		var a, b string
		if i < len(ref) {
			a = ref[i]
		}
		if i < len(got) {
			b = got[i]
		}
		if a != b {
			t.Errorf("line %d:\nnats-server %s\nleafbox     %s", i, a, b)
		}
	}
}
