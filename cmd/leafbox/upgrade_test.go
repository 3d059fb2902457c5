//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nkeys"
)

// upgradeSite is an installed leafbox (a copy of the test binary in its
// own bin directory) running from it, with an operator key trusted in its
// configuration, for `leafbox upgrade` to replace.
type upgradeSite struct {
	t        *testing.T
	dir      string
	bin      string // the installed binary
	orig     []byte // its bytes before any upgrade
	cfg      string
	seed     string // the trusted operator's seed file
	portsDir string
	logFile  string
}

func writeOperator(t *testing.T, path string) string {
	t.Helper()
	kp, err := nkeys.CreateOperator()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	if err := os.WriteFile(path, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return pub
}

func newUpgradeSite(t *testing.T) *upgradeSite {
	t.Helper()
	s := &upgradeSite{t: t, dir: t.TempDir()}
	s.bin = filepath.Join(s.dir, "bin", "leafbox")
	s.portsDir = filepath.Join(s.dir, "run")
	s.logFile = filepath.Join(s.dir, "leafbox.log")
	for _, d := range []string{filepath.Dir(s.bin), s.portsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(binary)
	if err != nil {
		t.Fatal(err)
	}
	s.orig = data
	if err := os.WriteFile(s.bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	s.seed = filepath.Join(s.dir, "operator.nk")
	pub := writeOperator(t, s.seed)
	s.cfg = filepath.Join(s.dir, "leafbox.yaml")
	conf := fmt.Sprintf("listen: 127.0.0.1\nport: -1\nhttp_port: -1\njetstream: {store_dir: %q}\nupgrade: {trusted_keys: [%s]}\n",
		filepath.Join(s.dir, "store"), pub)
	if err := os.WriteFile(s.cfg, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// Started by the test; the upgrades start its successors detached.
	log, err := os.OpenFile(s.logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command(s.bin, "run", "--config", s.cfg, "--ports-file-dir", s.portsDir)
	cmd.Env = append(os.Environ(), "LEAFBOX_CONFIG=")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait() }() // reaps it when an upgrade stops it
	t.Cleanup(func() {
		// Whatever leafbox runs now, the test's or one an upgrade started.
		_ = cmd.Process.Kill()
		for _, pid := range s.pids() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	s.awaitHealthy()
	return s
}

// pids lists the pids of the ports files: the leafboxes running.
func (s *upgradeSite) pids() []int {
	entries, _ := os.ReadDir(s.portsDir)
	var pids []int
	for _, e := range entries {
		name := strings.TrimSuffix(strings.TrimPrefix(e.Name(), "leafbox_"), ".ports")
		if pid, err := strconv.Atoi(name); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// awaitHealthy waits for exactly one running leafbox that answers
// /healthz and returns its pid and /varz.
func (s *upgradeSite) awaitHealthy() (int, map[string]any) {
	s.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		if pids := s.pids(); len(pids) == 1 {
			data, err := os.ReadFile(filepath.Join(s.portsDir, fmt.Sprintf("leafbox_%d.ports", pids[0])))
			var pf ports
			if err == nil && json.Unmarshal(data, &pf) == nil && len(pf.Monitoring) > 0 {
				if code, _ := httpStatus(pf.Monitoring[0] + "/healthz"); code == 200 {
					var v map[string]any
					_ = json.Unmarshal([]byte(get(s.t, pf.Monitoring[0]+"/varz")), &v)
					return pids[0], v
				}
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(s.logFile)
			s.t.Fatalf("no single healthy leafbox within %v (ports files for %v); log:\n%s", waitTimeout, s.pids(), log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func httpStatus(url string) (int, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// leafbox runs the installed binary with args and returns its exit code,
// stdout and stderr.
func (s *upgradeSite) leafbox(args ...string) (int, string, string) {
	s.t.Helper()
	cmd := exec.Command(s.bin, args...)
	cmd.Env = append(os.Environ(), "LEAFBOX_CONFIG=")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		s.t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// upgrade runs `leafbox upgrade FILE` against the running leafbox.
func (s *upgradeSite) upgrade(file string, extra ...string) (int, string, string) {
	s.t.Helper()
	pid, _ := s.awaitHealthy()
	args := append([]string{"upgrade", file, "--config", s.cfg, "--pid", strconv.Itoa(pid)}, extra...)
	return s.leafbox(args...)
}

// sign signs file with the trusted operator.
func (s *upgradeSite) sign(file string) {
	s.t.Helper()
	if code, out, errOut := s.leafbox("upgrade", "sign", "--seed", s.seed, file); code != 0 {
		s.t.Fatalf("upgrade sign: %d\n%s%s", code, out, errOut)
	}
}

// installed reports whether the installed binary still has its first bytes.
func (s *upgradeSite) unchanged() bool {
	data, err := os.ReadFile(s.bin)
	return err == nil && bytes.Equal(data, s.orig)
}

// goBuild builds pkg (relative to this directory) into dir/name with
// extra go build arguments and env, and returns the path.
func goBuild(t *testing.T, dir, name, pkg string, env []string, args ...string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	cmdArgs := append(append([]string{"build", "-o", out}, args...), pkg)
	cmd := exec.Command("go", cmdArgs...)
	cmd.Env = append(os.Environ(), env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

func expect(t *testing.T, what string, code int, out, errOut string, wantCode int, wants ...string) {
	t.Helper()
	if code != wantCode {
		t.Fatalf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", what, code, wantCode, out, errOut)
	}
	for _, w := range wants {
		if !strings.Contains(out+errOut, w) {
			t.Fatalf("%s: no %q in the output\nstdout:\n%s\nstderr:\n%s", what, w, out, errOut)
		}
	}
}

func TestUpgradeRefusesAndRollsBack(t *testing.T) {
	s := newUpgradeSite(t)
	builds := t.TempDir()
	fakeExit := goBuild(t, builds, "fake-exit", "./testdata/fakeleafbox", nil, "-ldflags", "-X main.mode=exit")
	fakeHang := goBuild(t, builds, "fake-hang", "./testdata/fakeleafbox", nil, "-ldflags", "-X main.mode=hang")
	fakeArm := goBuild(t, builds, "fake-arm64", "./testdata/fakeleafbox", []string{"GOARCH=arm64"})
	pid0, _ := s.awaitHealthy()

	// Unsigned, signed by another operator, altered after signing: refused
	// before anything changes.
	code, out, errOut := s.upgrade(fakeExit)
	expect(t, "unsigned", code, out, errOut, 1, "has no signature file "+fakeExit+".sig")
	other := filepath.Join(builds, "other.nk")
	otherPub := writeOperator(t, other)
	if c, o, e := s.leafbox("upgrade", "sign", "--seed", other, fakeExit); c != 0 {
		t.Fatalf("sign: %s%s", o, e)
	}
	code, out, errOut = s.upgrade(fakeExit)
	expect(t, "wrong key", code, out, errOut, 1, "signed by "+otherPub+", which is not in upgrade.trusted_keys")
	s.sign(fakeExit)
	f, err := os.OpenFile(fakeExit, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.Write([]byte{0})
	f.Close()
	code, out, errOut = s.upgrade(fakeExit)
	expect(t, "altered", code, out, errOut, 1, "bad signature", "is not the file signed")
	s.sign(fakeArm)
	code, out, errOut = s.upgrade(fakeArm)
	expect(t, "arch", code, out, errOut, 1, "is built for EM_AARCH64, this gateway runs EM_X86_64")
	if pid, _ := s.awaitHealthy(); pid != pid0 || !s.unchanged() {
		t.Fatalf("a refused upgrade changed something: pid %d (was %d), binary unchanged %v", pid, pid0, s.unchanged())
	}
	if _, err := os.Stat(s.bin + ".prev"); err == nil {
		t.Fatal("a refused upgrade left leafbox.prev")
	}

	// A new binary that exits at once: the old one comes back.
	s.sign(fakeExit)
	code, out, errOut = s.upgrade(fakeExit, "--timeout", "5s")
	expect(t, "exits", code, out, errOut, 1, "the new leafbox exited: exit status 3", "rolled back")
	pid1, _ := s.awaitHealthy()
	if !s.unchanged() || pid1 == pid0 {
		t.Fatalf("after the rollback: binary unchanged %v, pid %d (was %d)", s.unchanged(), pid1, pid0)
	}
	log, _ := os.ReadFile(s.logFile)
	if !strings.Contains(string(log), "fakeleafbox exit: run --config") {
		t.Fatalf("the broken binary did not run with the old command line; log:\n%s", log)
	}

	// One that starts but never reports healthy: the same.
	s.sign(fakeHang)
	// (10 s, not less: on a loaded machine -race CI the fake's first
	// answer can take seconds; the message names its answer.)
	code, out, errOut = s.upgrade(fakeHang, "--timeout", "10s")
	expect(t, "never healthy", code, out, errOut, 1, "not healthy within 10s: /healthz: 503", "rolled back")
	if _, _ = s.awaitHealthy(); !s.unchanged() {
		t.Fatal("the old binary is not back")
	}

	// A good one: swapped, restarted, healthy, the old one kept.
	good := goBuild(t, builds, "leafbox-new", ".", nil, raceArgs("-ldflags", "-X github.com/leafbox/leafbox/cmd/internal/cli.version=v9.9.9-test")...)
	s.sign(good)
	code, out, errOut = s.upgrade(good, "--timeout", "30s")
	expect(t, "good", code, out, errOut, 0, "upgraded: pid", "runs v9.9.9-test and is healthy")
	_, v := s.awaitHealthy()
	if v["leafbox_version"] != "v9.9.9-test" {
		t.Fatalf("/varz leafbox_version %v", v["leafbox_version"])
	}
	prev, err := os.ReadFile(s.bin + ".prev")
	if err != nil || !bytes.Equal(prev, s.orig) {
		t.Fatalf("leafbox.prev is not the old binary: %v", err)
	}
	if code, out, _ := s.leafbox("version"); code != 0 || !strings.HasPrefix(out, "leafbox v9.9.9-test") {
		t.Fatalf("the installed binary: %d %s", code, out)
	}
}

// raceArgs prepends -race to args when the tests run with it, so the
// build reuses TestMain's cached packages.
func raceArgs(args ...string) []string {
	if raceEnabled {
		return append([]string{"-race"}, args...)
	}
	return args
}
