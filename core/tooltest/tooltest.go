// Package tooltest finds the pinned tools that scripts/test installs into
// the repository's .tools/bin: nats-server and the nats CLI. A test that
// needs one calls NatsServer or NatsCLI; each falls back to PATH and
// fails the test, naming the command that installs it, when neither has
// the tool.
//
// Only _test.go files and other test-support packages import it
// (scripts/check-imports).
package tooltest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NatsServer returns the path of the pinned nats-server binary.
func NatsServer(t testing.TB) string {
	t.Helper()
	return find(t, "nats-server")
}

// NatsCLI returns the path of the pinned nats CLI (natscli).
func NatsCLI(t testing.TB) string {
	t.Helper()
	return find(t, "nats")
}

// find looks for name in .tools/bin of the module that holds the working
// directory (a test runs in its package's folder), then on PATH.
func find(t testing.TB, name string) string {
	t.Helper()
	if bin, ok := pinned(name); ok {
		return bin
	}
	if bin, err := exec.LookPath(name); err == nil {
		return bin
	}
	t.Fatalf("tooltest: %s is in neither .tools/bin nor PATH: run scripts/test, which installs the pinned version", name)
	return ""
}

// pinned returns .tools/bin/name of the nearest enclosing module root.
func pinned(name string) (string, bool) {
	dir, err := os.Getwd()
	if err != nil {
		return "", false
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			bin := filepath.Join(d, ".tools", "bin", name)
			if _, err := os.Stat(bin); err == nil {
				return bin, true
			}
			return "", false
		}
		if filepath.Dir(d) == d {
			return "", false
		}
	}
}
