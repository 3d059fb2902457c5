//go:build linux

package scripts

import (
	"context"
	"fmt"
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

// bootTimeout bounds each wait on the booted container: its boot, a unit
// reaching a state, its shutdown.
const bootTimeout = 2 * time.Minute

// container is a Debian root booted with systemd-nspawn: systemd runs as
// its PID 1, with a network namespace of its own (the packaged leafbox
// takes 4222 and 8222 there, not on the host).
type container struct {
	t      *testing.T
	root   string
	nspawn *exec.Cmd
	done   chan error
	log    syncBuffer
	leader int // the container's PID 1, as the host sees it
}

// boot starts systemd in root and waits until its PID 1 is there.
func boot(t *testing.T, root string) *container {
	t.Helper()
	c := &container{t: t, root: root, done: make(chan error, 1)}
	// --keep-unit and --register=no: no host systemd or machined is
	// needed; --console=pipe: no terminal.
	c.nspawn = exec.Command("systemd-nspawn", "--quiet", "--boot", "--directory="+root, "--private-network",
		"--register=no", "--keep-unit", "--console=pipe", "--machine=leafbox-test")
	c.nspawn.Stdout, c.nspawn.Stderr = &c.log, &c.log
	if err := c.nspawn.Start(); err != nil {
		t.Fatalf("systemd-nspawn: %v", err)
	}
	go func() { c.done <- c.nspawn.Wait() }()
	t.Cleanup(c.shutdown)
	c.await("the container's systemd", func() bool {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", c.nspawn.Process.Pid, c.nspawn.Process.Pid))
		if err != nil {
			return false
		}
		f := strings.Fields(string(data))
		if len(f) == 0 {
			return false
		}
		c.leader, _ = strconv.Atoi(f[0])
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c.leader))
		return err == nil && strings.TrimSpace(string(comm)) == "systemd"
	})
	c.await("the boot to finish", func() bool {
		out, _ := c.exec("systemctl", "is-system-running")
		return out == "running" || out == "degraded"
	})
	return c
}

// shutdown powers the container off (SIGTERM makes nspawn ask systemd
// to), killing it if it does not stop within bootTimeout.
func (c *container) shutdown() {
	if c.nspawn.ProcessState != nil {
		return
	}
	_ = c.nspawn.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(bootTimeout):
		_ = c.nspawn.Process.Kill()
		<-c.done
		c.t.Errorf("the container did not power off within %v:\n%s", bootTimeout, c.log.String())
	}
}

// exec runs a command inside the container (every namespace of its PID
// 1) and returns its trimmed output.
func (c *container) exec(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--target", strconv.Itoa(c.leader), "--all", "--",
		"/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive", "SYSTEMD_PAGER=", name}, args...)...)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// run is exec that must succeed.
func (c *container) run(name string, args ...string) string {
	c.t.Helper()
	out, err := c.exec(name, args...)
	if err != nil {
		c.t.Fatalf("in the container: %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

// await polls cond until it holds, for at most bootTimeout.
func (c *container) await(what string, cond func() bool) {
	c.t.Helper()
	deadline := time.After(bootTimeout)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case err := <-c.done:
			c.t.Fatalf("systemd-nspawn exited (%v) before %s:\n%s", err, what, c.log.String())
		case <-deadline:
			c.t.Fatalf("no %s within %v; journal:\n%s", what, bootTimeout, c.journal())
		case <-tick.C:
		}
	}
}

// journal returns leafbox.service's journal.
func (c *container) journal() string {
	out, _ := c.exec("journalctl", "--unit=leafbox", "--no-pager", "--output=cat")
	return out
}

// unit returns properties of leafbox.service (systemctl show).
func (c *container) unit(props ...string) map[string]string {
	c.t.Helper()
	out := c.run("systemctl", "show", "leafbox.service", "--property="+strings.Join(props, ","))
	m := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			m[k] = v
		}
	}
	return m
}

// awaitActive waits until leafbox.service runs with a main PID other
// than old, and returns it.
func (c *container) awaitActive(old string) string {
	c.t.Helper()
	var pid string
	c.await("leafbox.service active (new main PID)", func() bool {
		u := c.unit("ActiveState", "SubState", "MainPID")
		pid = u["MainPID"]
		return u["ActiveState"] == "active" && u["SubState"] == "running" && pid != "0" && pid != old
	})
	return pid
}

// underSystemd installs deb1 in a fresh root, boots it with systemd as
// PID 1, and checks the package's unit as systemd runs it: enabled and
// started on install, Type=notify (systemd marks it started only on
// READY=1) with its STATUS= line, the sandbox in force, reload by SIGHUP,
// a watchdog timeout and restart while the store takes no writes, a
// restart into the new version on upgrade, and a stop on purge.
func underSystemd(t *testing.T, root, deb1, deb2 string) {
	r := chrootEnv{t: t, root: root}
	for _, deb := range []string{deb1, deb2} {
		// Not in /tmp: systemd mounts a fresh one.
		copyFile(t, deb, filepath.Join(root, "root", filepath.Base(deb)))
	}
	r.run("dpkg", "-i", "/root/"+filepath.Base(deb1))
	// A shorter watchdog, as `systemctl edit leafbox` would set it, so the
	// timeout comes within seconds.
	dropIn := filepath.Join(root, "etc/systemd/system/leafbox.service.d")
	if err := os.MkdirAll(dropIn, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dropIn, "watchdog.conf"), []byte("[Service]\nWatchdogSec=4s\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	c := boot(t, root)
	pid := c.awaitActive("0")
	t.Logf("booted systemd in the root, leafbox.service active, in %v", time.Since(began).Round(100*time.Millisecond))
	u := c.unit("Type", "NotifyAccess", "StatusText", "WatchdogUSec", "UnitFileState", "User", "NRestarts")
	for k, want := range map[string]string{"Type": "notify", "NotifyAccess": "main", "StatusText": "ready for clients; no uplinks",
		"WatchdogUSec": "4s", "UnitFileState": "enabled", "User": "leafbox", "NRestarts": "0"} {
		if u[k] != want {
			t.Errorf("leafbox.service %s=%q, want %q", k, u[k], want)
		}
	}
	status := c.run("systemctl", "status", "leafbox", "--no-pager")
	if !strings.Contains(status, "Active: active (running)") || !strings.Contains(status, `Status: "ready for clients; no uplinks"`) {
		t.Errorf("systemctl status leafbox:\n%s", status)
	}
	if sec, err := c.exec("systemd-analyze", "security", "leafbox.service", "--no-pager"); err == nil {
		if i := strings.LastIndex(sec, "Overall exposure level"); i >= 0 {
			t.Logf("systemd-analyze security: %s", sec[i:])
		}
	}
	journal := c.journal()
	for _, want := range []string{"config=/etc/leafbox/leafbox.yaml", "store_dir=/var/lib/leafbox", "ready for clients",
		`msg="notified the service manager" socket=/run/systemd/notify watchdog=4s`} {
		if !strings.Contains(journal, want) {
			t.Fatalf("journal lacks %q:\n%s", want, journal)
		}
	}

	// systemctl reload: SIGHUP, bracketed by RELOADING=1 and READY=1.
	c.run("systemctl", "reload", "leafbox")
	c.await("the reload in the journal", func() bool { return strings.Contains(c.journal(), "reload complete") })
	if got := c.unit("ActiveState", "MainPID"); got["ActiveState"] != "active" || got["MainPID"] != pid {
		t.Fatalf("after reload: %v, want active with main PID %s", got, pid)
	}

	// The sandbox, seen from inside the service's mount namespace: the
	// file system is read-only (ProtectSystem=strict) but for the state
	// directory, and /tmp is its own (PrivateTmp).
	c.run("touch", "/tmp/host-side")
	inService := func(args ...string) (string, error) {
		return c.exec("nsenter", append([]string{"--target", pid, "--mount", "--"}, args...)...)
	}
	if out, err := inService("touch", "/etc/leafbox/probe"); err == nil || !strings.Contains(out, "Read-only file system") {
		t.Errorf("the service can write /etc (%v): %s", err, out)
	}
	if out, err := inService("touch", "/var/lib/leafbox/probe"); err != nil {
		t.Errorf("the service cannot write its state directory: %v %s", err, out)
	}
	c.run("rm", "/var/lib/leafbox/probe")
	if out, err := inService("ls", "/tmp/host-side"); err == nil {
		t.Errorf("the service shares /tmp: %s", out)
	}

	// The store stops taking writes (read-only for the leafbox user): the
	// pings stop, systemd kills the service with SIGABRT and restarts it;
	// StateDirectoryMode= makes the directory writable again on start.
	c.run("chmod", "0500", "/var/lib/leafbox")
	broke := time.Now()
	newPID := c.awaitActive(pid)
	if got := c.unit("NRestarts")["NRestarts"]; got != "1" {
		t.Errorf("NRestarts=%s after the watchdog timeout, want 1", got)
	}
	journal = c.journal()
	for _, want := range []string{"watchdog ping withheld: leafbox is not healthy",
		"store_dir /var/lib/leafbox is not writable: permission denied",
		"leafbox.service: Watchdog timeout (limit 4s)!", "Killing process " + pid + " (leafbox) with signal SIGABRT"} {
		if !strings.Contains(journal, want) {
			t.Fatalf("journal lacks %q:\n%s", want, journal)
		}
	}
	t.Logf("watchdog restart %v after the store broke", time.Since(broke).Round(100*time.Millisecond))
	if got := c.run("stat", "-c", "%a %U:%G", "/var/lib/leafbox"); got != "750 leafbox:leafbox" {
		t.Errorf("/var/lib/leafbox after the restart: %s", got)
	}

	// An upgrade restarts the service into the new version.
	c.run("dpkg", "-i", "/root/"+filepath.Base(deb2))
	upgraded := c.awaitActive(newPID)
	if out := c.run("cat", "/proc/"+upgraded+"/cmdline"); !strings.HasPrefix(out, "/usr/bin/leafbox") {
		t.Errorf("main process after the upgrade: %q", out)
	}
	c.await("the new version in the journal", func() bool {
		return strings.Contains(c.journal(), `msg="starting leafbox" version="1.0.1 `)
	})

	// leafbox upgrade, as an admin runs it on the gateway while the
	// service runs: a broken binary is rolled back, a good one stays.
	upgradeUnderSystemd(t, c, deb1)

	// Purge stops the service first (prerm) and removes the unit.
	c.run("dpkg", "--purge", "leafbox")
	if got := c.unit("LoadState", "ActiveState"); got["LoadState"] != "not-found" || got["ActiveState"] != "inactive" {
		t.Errorf("after purge: %v, want not-found and inactive", got)
	}
	if _, err := os.Lstat(filepath.Join(root, "usr/bin/leafbox.prev")); !os.IsNotExist(err) {
		t.Errorf("/usr/bin/leafbox.prev, kept by leafbox upgrade, is left after purge (%v)", err)
	}
	if !strings.Contains(c.journal(), `msg=stopped`) {
		t.Errorf("no clean stop in the journal:\n%s", c.journal())
	}
	began = time.Now()
	c.shutdown()
	t.Logf("powered off in %v", time.Since(began).Round(100*time.Millisecond))
}

// upgradeUnderSystemd runs `leafbox upgrade` inside the booted container
// (as root, outside the service's sandbox) while leafbox.service runs
// version 1.0.1: first with a signed binary that exits at once (systemctl
// restart fails, the old binary comes back and the unit runs it again),
// then with deb1's binary (1.0.0), signed, which systemd restarts into;
// /usr/bin/leafbox.prev keeps the one it replaced. The signatures are
// made with `leafbox upgrade sign` in the container, by an operator key
// the command trusts through --trusted-key.
func upgradeUnderSystemd(t *testing.T, c *container, deb1 string) {
	t.Helper()
	op, err := nkeys.CreateOperator()
	if err != nil {
		t.Fatal(err)
	}
	opPub, _ := op.PublicKey()
	seed, _ := op.Seed()
	if err := os.WriteFile(filepath.Join(c.root, "root", "operator.nk"), seed, 0o600); err != nil {
		t.Fatal(err)
	}
	// The broken ones: cmd/leafbox's fakeleafbox, static; `run` exits 3
	// (broken) or serves a never-healthy monitor and never sends READY=1
	// (hang).
	for name, mode := range map[string]string{"broken": "exit", "hang": "hang"} {
		build := exec.Command("go", "build", "-trimpath", "-ldflags", "-X main.mode="+mode, "-o", filepath.Join(c.root, "root", name),
			"./cmd/leafbox/testdata/fakeleafbox")
		build.Dir = repoRoot(t)
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build the %s binary: %v\n%s", name, err, out)
		}
	}
	// The good one: the 1.0.0 package's binary.
	x := t.TempDir()
	output(t, "dpkg-deb", "--extract", deb1, x)
	copyFile(t, filepath.Join(x, "usr", "bin", "leafbox"), filepath.Join(c.root, "root", "good"))
	for _, f := range []string{"/root/broken", "/root/hang", "/root/good"} {
		c.run("chmod", "0755", f)
		c.run("leafbox", "upgrade", "sign", "--seed", "/root/operator.nk", f)
	}
	installed := sha256Of(t, filepath.Join(c.root, "usr", "bin", "leafbox"))
	pid := c.unit("MainPID")["MainPID"]
	starts := func(version string) int {
		return strings.Count(c.journal(), `msg="starting leafbox" version="`+version+` `)
	}
	started101, started100 := starts("1.0.1"), starts("1.0.0")

	began := time.Now()
	out, err := c.exec("leafbox", "upgrade", "/root/broken", "--trusted-key", opPub, "--timeout", "30s")
	t.Logf("leafbox upgrade /root/broken under systemd (%v, %v):\n%s", time.Since(began).Round(100*time.Millisecond), err, out)
	if err == nil || !strings.Contains(out, "rolled back") || !strings.Contains(out, "the new leafbox exited: systemd unit leafbox: ") ||
		time.Since(began) > 25*time.Second {
		t.Fatalf("leafbox upgrade of a binary that exits: %v, want exit 1 once systemd shows the unit failed (before the 30s timeout) and a roll back:\n%s", err, out)
	}
	if got := sha256Of(t, filepath.Join(c.root, "usr", "bin", "leafbox")); got != installed {
		t.Fatalf("after the rollback /usr/bin/leafbox is not the installed 1.0.1 binary")
	}
	pid = c.awaitActive(pid)
	c.await("1.0.1 started again in the journal", func() bool { return starts("1.0.1") > started101 })
	if !strings.Contains(c.journal(), "fakeleafbox exit: run") {
		t.Errorf("the broken binary did not run under the unit:\n%s", c.journal())
	}

	// One that never sends READY=1: the rollback comes after --timeout,
	// not after the unit's 2 min start timeout.
	started101 = starts("1.0.1")
	began = time.Now()
	out, err = c.exec("leafbox", "upgrade", "/root/hang", "--trusted-key", opPub, "--timeout", "10s")
	took := time.Since(began)
	t.Logf("leafbox upgrade /root/hang under systemd (%v, %v):\n%s", took.Round(100*time.Millisecond), err, out)
	if err == nil || !strings.Contains(out, "not healthy within 10s") || !strings.Contains(out, "rolled back") || took > 60*time.Second {
		t.Fatalf("leafbox upgrade of a binary that never gets ready: %v after %v, want exit 1 and a roll back soon after 10s:\n%s", err, took, out)
	}
	if got := sha256Of(t, filepath.Join(c.root, "usr", "bin", "leafbox")); got != installed {
		t.Fatalf("after the rollback /usr/bin/leafbox is not the installed 1.0.1 binary")
	}
	pid = c.awaitActive(pid)
	c.await("1.0.1 started again in the journal", func() bool { return starts("1.0.1") > started101 })

	began = time.Now()
	out, err = c.exec("leafbox", "upgrade", "/root/good", "--trusted-key", opPub, "--timeout", "60s")
	t.Logf("leafbox upgrade /root/good under systemd (%v, %v):\n%s", time.Since(began).Round(100*time.Millisecond), err, out)
	if err != nil || !strings.Contains(out, "upgrade complete") {
		t.Fatalf("leafbox upgrade of the 1.0.0 binary: %v\n%s", err, out)
	}
	upgraded := c.awaitActive(pid)
	if sha256Of(t, filepath.Join(c.root, "usr", "bin", "leafbox")) != sha256Of(t, filepath.Join(c.root, "root", "good")) ||
		sha256Of(t, filepath.Join(c.root, "usr", "bin", "leafbox.prev")) != installed {
		t.Errorf("after the upgrade /usr/bin/leafbox is not the new binary, or leafbox.prev not the one it replaced")
	}
	if u := c.unit("ActiveState", "SubState", "StatusText"); u["StatusText"] != "ready for clients; no uplinks" {
		t.Errorf("leafbox.service after leafbox upgrade: %v (main PID %s)", u, upgraded)
	}
	c.await("1.0.0 started again in the journal", func() bool { return starts("1.0.0") > started100 })
}
