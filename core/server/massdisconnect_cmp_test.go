//go:build stallcmp

package server_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// TestMassDisconnectCompare plays issue 8's mass disconnect at full size
// (100,000 subscriptions, 40,000 fill subjects, 2,000 nats.go clients)
// against server processes, alternating them over rounds, and prints the
// median of each figure per server:
//
//   - leafbox built from this tree;
//   - leafbox built from the git revision $STALLCMP_BEFORE, if set (the
//     tree before a fix, say);
//   - nats-server: $STALLCMP_NATS_SERVER, by default .tools/bin/nats-server.
//
// $STALLCMP_ROUNDS (default 3) and $STALLCMP_CLIENTS (default 2000) change
// the size of the run. A new client that gets nothing within
// $STALLCMP_TIMEOUT (default 60s) is reported as taking that long. Run it
// with
//
//	STALLCMP_BEFORE=HEAD~2 go test -tags stallcmp -run TestMassDisconnectCompare -v -timeout 60m ./core/server/
func TestMassDisconnectCompare(t *testing.T) {
	rounds := envInt(t, "STALLCMP_ROUNDS", 3)
	sc := massDisconnect{BigSubs: 100_000, FillSubjects: 40_000, Clients: envInt(t, "STALLCMP_CLIENTS", 2000)}
	timeout := 60 * time.Second
	if v := os.Getenv("STALLCMP_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		require.NoError(t, err)
		timeout = d
	}
	bin := t.TempDir()
	type target struct {
		label string
		start func(t *testing.T, dir string) string // returns the client URL
		res   []massDisconnectResult
	}
	var targets []*target
	leafbox := func(label, path string) *target {
		return &target{label: label, start: func(t *testing.T, dir string) string {
			return startProcess(t, dir, path, "leafbox", "run", "--addr", "127.0.0.1", "--port", "-1",
				"--http-port", "0", "--jetstream=false", "--ports-file-dir", dir)
		}}
	}
	targets = append(targets, leafbox("leafbox", buildLeafbox(t, "..", "..", filepath.Join(bin, "leafbox"))))
	if rev := os.Getenv("STALLCMP_BEFORE"); rev != "" {
		src := filepath.Join(bin, "src")
		require.NoError(t, os.MkdirAll(src, 0o755))
		archive := exec.Command("sh", "-c", `git -C ../.. archive "$0" | tar -x -C "$1"`, rev, src)
		if out, err := archive.CombinedOutput(); err != nil {
			t.Fatalf("git archive %s: %v\n%s", rev, err, out)
		}
		targets = append(targets, leafbox("leafbox "+rev, buildLeafbox(t, src, ".", filepath.Join(bin, "leafbox-before"))))
	}
	natsServer := os.Getenv("STALLCMP_NATS_SERVER")
	if natsServer == "" {
		natsServer, _ = filepath.Abs("../../.tools/bin/nats-server")
	}
	targets = append(targets, &target{label: "nats-server", start: func(t *testing.T, dir string) string {
		return startProcess(t, dir, natsServer, "nats-server", "-a", "127.0.0.1", "-p", "-1", "--ports_file_dir", dir)
	}})

	for round := range rounds {
		for _, tg := range targets {
			t.Run(fmt.Sprintf("%s/round%d", strings.ReplaceAll(tg.label, " ", "_"), round+1), func(t *testing.T) {
				url := tg.start(t, t.TempDir())
				res := sc.run(t, url, timeout)
				t.Logf("%s: %v", tg.label, res)
				tg.res = append(tg.res, res)
			})
		}
	}
	median := func(rs []massDisconnectResult, f func(massDisconnectResult) time.Duration) time.Duration {
		ds := make([]time.Duration, 0, len(rs))
		for _, r := range rs {
			ds = append(ds, f(r))
		}
		slices.Sort(ds)
		if len(ds) == 0 {
			return 0
		}
		return ds[len(ds)/2]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "mass disconnect: %d subscriptions, %d fill subjects, %d clients closing; medians of %d rounds\n",
		sc.BigSubs, sc.FillSubjects, sc.Clients, rounds)
	fmt.Fprintf(&b, "| server | new client: connect | first round trip | client connected before: slowest round trip |\n|---|---|---|---|\n")
	for _, tg := range targets {
		fmt.Fprintf(&b, "| %s | %v | %v | %v |\n", tg.label,
			median(tg.res, func(r massDisconnectResult) time.Duration { return r.Connect }).Round(10*time.Microsecond),
			median(tg.res, func(r massDisconnectResult) time.Duration { return r.FirstRoundTrip }).Round(10*time.Microsecond),
			median(tg.res, func(r massDisconnectResult) time.Duration { return r.OldMax }).Round(10*time.Microsecond))
	}
	t.Log("\n" + b.String())
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// buildLeafbox builds ./cmd/leafbox of the module in dir into out.
func buildLeafbox(t *testing.T, dir, module, out string) string {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", out, "./cmd/leafbox")
	cmd.Dir = filepath.Join(dir, module)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build leafbox in %s: %v\n%s", cmd.Dir, err, b)
	}
	return out
}

// startProcess runs a server binary in dir until the test ends and returns
// the client URL from the ports file it writes to dir.
func startProcess(t *testing.T, dir, bin, name string, args ...string) string {
	t.Helper()
	log, err := os.Create(filepath.Join(dir, "server.log"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	// The ports file has no event to wait on: poll it, with a deadline.
	pattern := filepath.Join(dir, fmt.Sprintf("%s_%d.ports", name, cmd.Process.Pid))
	deadline := time.Now().Add(15 * time.Second)
	for {
		if b, err := os.ReadFile(pattern); err == nil {
			var ports struct {
				NATS []string `json:"nats"`
			}
			if json.Unmarshal(b, &ports) == nil && len(ports.NATS) > 0 {
				return ports.NATS[0]
			}
		}
		select {
		case <-exited:
			b, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("%s exited:\n%s", bin, b)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s wrote no %s", bin, pattern)
		}
	}
}
