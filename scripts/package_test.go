//go:build linux

package scripts

import (
	"bufio"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The tests of the Debian packages (scripts/package, firmware/deb): the
// packages of every architecture are inspected with dpkg-deb, and the one
// of this machine's architecture is installed, upgraded and purged for
// real inside a throwaway Debian root (debootstrap + chroot), never on the
// host. The root is made once and cached as a tarball in
// .cache/debootstrap (git ignores .cache/); a fresh copy is unpacked for
// each run.

// debSuite and debVariant are the root's Debian release and debootstrap
// variant; debInclude adds what the package depends on and what
// `systemd-analyze verify` needs in a staged root (systemd's own units).
const (
	debSuite   = "bookworm"
	debVariant = "minbase"
	debInclude = "adduser,procps,systemd"
)

// debArch is a Debian architecture scripts/package builds, and what its
// binary must be.
type debArch struct {
	name    string
	machine elf.Machine
	level   string // the build setting that pins the ISA level
	goarch  string // the GOARCH it runs on natively
}

var debArches = []debArch{
	{name: "amd64", machine: elf.EM_X86_64, level: "GOAMD64=v1", goarch: "amd64"},
	{name: "arm64", machine: elf.EM_AARCH64, level: "GOARM64=v8.0", goarch: "arm64"},
	{name: "armhf", machine: elf.EM_ARM, level: "GOARM=6", goarch: "arm"},
}

// runPackage runs scripts/package -o dir with arches and env; it returns
// the package paths it printed, by architecture.
func runPackage(t *testing.T, dir string, env []string, arches ...string) map[string]string {
	t.Helper()
	began := time.Now()
	cmd := exec.Command(filepath.Join(repoRoot(t), "scripts", "package"), append([]string{"-o", dir}, arches...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/package %v (%v): %v\n%s", arches, env, err, out)
	}
	t.Logf("scripts/package %v %v in %v:\n%s", env, arches, time.Since(began).Round(time.Second), out)
	debs := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, "/") && strings.HasSuffix(line, ".deb") {
			_, arch, _ := strings.Cut(strings.TrimSuffix(filepath.Base(line), ".deb"), "_")
			_, arch, _ = strings.Cut(arch, "_")
			debs[arch] = line
		}
	}
	return debs
}

// output runs name with args and returns its trimmed combined output.
func output(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// wantPackageFiles is every path of the package's data, with its mode and
// owner as `dpkg-deb -c` lists them.
var wantPackageFiles = []string{
	"drwxr-xr-x root/root ./",
	"drwxr-xr-x root/root ./etc/",
	"drwxr-xr-x root/root ./etc/leafbox/",
	"-rw-r----- root/root ./etc/leafbox/leafbox.yaml",
	"drwxr-xr-x root/root ./lib/",
	"drwxr-xr-x root/root ./lib/systemd/",
	"drwxr-xr-x root/root ./lib/systemd/system/",
	"-rw-r--r-- root/root ./lib/systemd/system/leafbox.service",
	"drwxr-xr-x root/root ./usr/",
	"drwxr-xr-x root/root ./usr/bin/",
	"-rwxr-xr-x root/root ./usr/bin/leafbox",
}

// inspectPackage checks a package with dpkg-deb: its control fields, its
// conffiles and maintainer scripts, its file list, and its binary (an ELF
// for the architecture, static, stripped, built with the release
// settings, stamped with version).
func inspectPackage(t *testing.T, deb string, a debArch, version string) {
	t.Helper()
	fields := output(t, "dpkg-deb", "--showformat=${Package}|${Version}|${Architecture}|${Depends}|${Maintainer}|${Installed-Size}\n", "--show", deb)
	parts := strings.Split(fields, "|")
	if len(parts) != 6 || parts[0] != "leafbox" || parts[1] != version || parts[2] != a.name ||
		parts[3] != "adduser, init-system-helpers, procps" || parts[4] == "" {
		t.Fatalf("%s: fields %q, want leafbox|%s|%s|adduser, init-system-helpers, procps|maintainer|size", deb, fields, version, a.name)
	}
	installedKiB, err := strconv.Atoi(parts[5])
	if err != nil {
		t.Errorf("%s: Installed-Size %q is no number of KiB", deb, parts[5])
	}
	if got := output(t, "dpkg-deb", "--info", deb, "conffiles"); got != "/etc/leafbox/leafbox.yaml" {
		t.Errorf("%s: conffiles %q, want /etc/leafbox/leafbox.yaml", deb, got)
	}
	info := output(t, "dpkg-deb", "--info", deb)
	for _, script := range []string{"postinst", "prerm", "postrm"} {
		if !regexpLine(info, script, "#!/bin/sh") {
			t.Errorf("%s: no executable %s script:\n%s", deb, script, info)
		}
	}
	var files []string
	for _, line := range strings.Split(output(t, "dpkg-deb", "--contents", deb), "\n") {
		// drwxr-xr-x root/root 0 2026-12-01 23:06 ./etc/
		f := strings.Fields(line)
		if len(f) != 6 {
			t.Fatalf("%s: contents line %q", deb, line)
		}
		files = append(files, f[0]+" "+f[1]+" "+f[5])
	}
	if !slices.Equal(files, wantPackageFiles) {
		t.Errorf("%s: files\n%s\nwant\n%s", deb, strings.Join(files, "\n"), strings.Join(wantPackageFiles, "\n"))
	}

	dir := t.TempDir()
	output(t, "dpkg-deb", "--extract", deb, dir)
	bin := filepath.Join(dir, "usr", "bin", "leafbox")
	checkStaticStripped(t, bin, a.machine)
	checkBuildSettings(t, bin, a.level)
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	// Installed-Size is the binary plus the few small files beside it.
	if binKiB := len(data) / 1024; installedKiB < binKiB || installedKiB > binKiB+256 {
		t.Errorf("%s: Installed-Size %d KiB, want the binary's %d KiB plus at most 256", deb, installedKiB, binKiB)
	}
	// The version is stamped with -X: the string is in the binary.
	if !strings.Contains(string(data), version) {
		t.Errorf("%s: the binary does not carry its version %s", deb, version)
	}
	for _, f := range []string{"etc/leafbox/leafbox.yaml", "lib/systemd/system/leafbox.service"} {
		want, err := os.ReadFile(filepath.Join(repoRoot(t), "firmware", "deb", filepath.Base(f)))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := os.ReadFile(filepath.Join(dir, f)); err != nil || string(got) != string(want) {
			t.Errorf("%s: %s differs from firmware/deb/%s (%v)", deb, f, filepath.Base(f), err)
		}
	}
}

// regexpLine tells whether dpkg-deb --info lists script as executable
// ("*") with first line first.
func regexpLine(info, script, first string) bool {
	for _, line := range strings.Split(info, "\n") {
		f := strings.Fields(line)
		if len(f) >= 6 && f[4] == "*" && f[5] == script && strings.HasSuffix(line, first) {
			return true
		}
	}
	return false
}

// TestUnitFileHardening pins what the unit promises: Type=notify with a
// watchdog, the service user with serial access, the state directory, the
// journal, reload by SIGHUP, and the sandbox.
func TestUnitFileHardening(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot(t), "firmware", "deb", "leafbox.service"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			got[k] = append(got[k], v)
		}
	}
	for k, v := range map[string]string{
		"Type": "notify", "NotifyAccess": "main", "ExecStart": "/usr/bin/leafbox run",
		"ExecReload": "/bin/kill -HUP $MAINPID", "WatchdogSec": "30s", "Restart": "on-failure",
		"User": "leafbox", "Group": "leafbox", "SupplementaryGroups": "dialout",
		"StateDirectory": "leafbox", "StateDirectoryMode": "0750", "ReadWritePaths": "/var/lib/leafbox",
		"StandardOutput": "journal", "StandardError": "journal",
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
		"WantedBy": "multi-user.target",
	} {
		if !slices.Equal(got[k], []string{v}) {
			t.Errorf("leafbox.service: %s=%v, want %s", k, got[k], v)
		}
	}
	// DeviceAllow= (or options that add it, like ProtectClock=) would
	// close the serial devices to the bridges.
	for _, k := range []string{"DeviceAllow", "DevicePolicy", "PrivateDevices", "ProtectClock"} {
		if got[k] != nil {
			t.Errorf("leafbox.service sets %s=%v: serial devices would be cut off", k, got[k])
		}
	}
}

// TestDebianPackages builds the packages of every architecture (version
// 1.0.0, and 1.0.1 for this machine's), inspects them with dpkg-deb, and
// installs, upgrades and purges this machine's in a throwaway Debian root.
func TestDebianPackages(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: debootstrap and chroot (the test command runs as root)")
	}
	for _, tool := range []string{"dpkg-deb", "debootstrap", "chroot", "systemd-analyze", "systemd-nspawn", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: scripts/test installs it (apt-get install debootstrap systemd systemd-container)", tool)
		}
	}
	native := slices.IndexFunc(debArches, func(a debArch) bool { return a.goarch == runtime.GOARCH })
	if native < 0 {
		t.Fatalf("no Debian package for this machine (GOARCH %s)", runtime.GOARCH)
	}
	host := debArches[native]

	// The root first: on a cold cache debootstrap is the slow part, and
	// the builds below overlap nothing with it anyway.
	type rootResult struct {
		root string
		log  []string
		err  error
	}
	repo := repoRoot(t)
	rootDir := newRootDir(t, repo)
	rootCh := make(chan rootResult, 1)
	go func() {
		var r rootResult
		r.root, r.err = debianRoot(repo, host.name, rootDir, func(format string, args ...any) {
			r.log = append(r.log, fmt.Sprintf(format, args...))
		})
		rootCh <- r
	}()
	var rootRes *rootResult
	awaitRoot := func() rootResult {
		if rootRes == nil {
			r := <-rootCh
			rootRes = &r
		}
		return *rootRes
	}
	t.Cleanup(func() { awaitRoot() }) // before rootDir is removed

	dir := t.TempDir()
	v1 := runPackage(t, dir, []string{"VERSION=1.0.0"})
	v2 := runPackage(t, dir, []string{"VERSION=v1.0.1"}, host.name) // the leading v is dropped
	for _, a := range debArches {
		deb := v1[a.name]
		if deb == "" {
			t.Fatalf("scripts/package made no %s package: %v", a.name, v1)
		}
		if filepath.Base(deb) != "leafbox_1.0.0_"+a.name+".deb" {
			t.Errorf("package named %s", filepath.Base(deb))
		}
		inspectPackage(t, deb, a, "1.0.0")
		st, _ := os.Stat(deb)
		t.Logf("%s: %d bytes (%.2f MB)", filepath.Base(deb), st.Size(), float64(st.Size())/1e6)
	}
	inspectPackage(t, v2[host.name], host, "1.0.1")
	// Reproducible: the same tree and version give the same bytes.
	again := runPackage(t, t.TempDir(), []string{"VERSION=1.0.0"}, host.name)
	if a, b := sha256Of(t, v1[host.name]), sha256Of(t, again[host.name]); a != b {
		t.Errorf("%s is not reproducible: sha256 %s, then %s", filepath.Base(v1[host.name]), a, b)
	}

	rr := awaitRoot()
	for _, line := range rr.log {
		t.Log(line)
	}
	if rr.err != nil {
		t.Fatal(rr.err)
	}
	installUpgradePurge(t, rr.root, v1[host.name], v2[host.name])

	// Once more under systemd, booted in a second fresh root.
	root, err := debianRoot(repo, host.name, newRootDir(t, repo), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	underSystemd(t, root, v1[host.name], v2[host.name])
}

// installUpgradePurge drives dpkg inside root: install 1.0.0, check it
// and run it as the service would, edit the conffile, upgrade to 1.0.1
// (the edit and the state stay), verify the unit with systemd-analyze,
// then purge.
func installUpgradePurge(t *testing.T, root, deb1, deb2 string) {
	r := chrootEnv{t: t, root: root}
	for _, deb := range []string{deb1, deb2} {
		copyFile(t, deb, filepath.Join(root, "tmp", filepath.Base(deb)))
	}
	began := time.Now()
	out := r.run("dpkg", "-i", "/tmp/"+filepath.Base(deb1))
	t.Logf("dpkg -i %s (%v):\n%s", filepath.Base(deb1), time.Since(began).Round(100*time.Millisecond), out)
	if strings.Contains(out, "warning") {
		t.Errorf("dpkg -i warned:\n%s", out)
	}
	r.requireInstalled("1.0.0")

	// The user: a system user with no login, in its group and dialout.
	uid, gid := r.user("leafbox")
	if uid >= 1000 || uid == 0 {
		t.Errorf("leafbox uid %d: not a system user", uid)
	}
	if pw := r.passwdLine("leafbox"); !strings.HasSuffix(pw, ":/var/lib/leafbox:/usr/sbin/nologin") {
		t.Errorf("passwd: %q, want home /var/lib/leafbox and shell /usr/sbin/nologin", pw)
	}
	if got := r.run("id", "-nG", "leafbox"); got != "leafbox dialout" {
		t.Errorf("leafbox's groups: %q, want leafbox dialout", got)
	}

	// The files, their modes and owners.
	r.requireFile("/usr/bin/leafbox", 0o755, 0, 0)
	r.requireFile("/etc/leafbox/leafbox.yaml", 0o640, 0, gid)
	r.requireFile("/lib/systemd/system/leafbox.service", 0o644, 0, 0)
	r.requireFile("/var/lib/leafbox", fs.ModeDir|0o750, uid, gid)
	if link, err := os.Readlink(filepath.Join(root, "etc/systemd/system/multi-user.target.wants/leafbox.service")); err != nil ||
		link != "/lib/systemd/system/leafbox.service" {
		t.Errorf("the unit is not enabled: %q, %v", link, err)
	}
	if got := r.run("leafbox", "version"); !strings.HasPrefix(got, "leafbox 1.0.0\n") {
		t.Errorf("leafbox version:\n%s", got)
	}

	// Every unit the package ships, in its installed place, with systemd's
	// own units beside it.
	verifyUnits(t, root, packageUnits()...)

	// As the service runs it: the leafbox user, the packaged conffile
	// (read without --config), $STATE_DIRECTORY. It makes its identity
	// and streams in /var/lib/leafbox.
	r.asService("config", "check", "/etc/leafbox/leafbox.yaml")
	r.runService()
	identity := filepath.Join(root, "var/lib/leafbox/state/identity.nk")
	r.requireFile("/var/lib/leafbox/state/identity.nk", 0o600, uid, gid)
	id1 := sha256Of(t, identity)

	// The admin edits the conffile; the upgrade keeps the edit.
	conf := filepath.Join(root, "etc/leafbox/leafbox.yaml")
	edited := append(readFile(t, conf), []byte("server_name: site-7\n")...)
	if err := os.WriteFile(conf, edited, 0o640); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	out = r.run("dpkg", "-i", "/tmp/"+filepath.Base(deb2))
	t.Logf("dpkg -i %s, the upgrade (%v):\n%s", filepath.Base(deb2), time.Since(began).Round(100*time.Millisecond), out)
	if !strings.Contains(out, "Preparing to unpack /tmp/"+filepath.Base(deb2)+" ...\nUnpacking leafbox (1.0.1) over (1.0.0) ...") {
		t.Errorf("dpkg did not upgrade 1.0.0 to 1.0.1:\n%s", out)
	}
	r.requireInstalled("1.0.1")
	if got := r.run("leafbox", "version"); !strings.HasPrefix(got, "leafbox 1.0.1\n") {
		t.Errorf("leafbox version after the upgrade:\n%s", got)
	}
	if got := readFile(t, conf); string(got) != string(edited) {
		t.Errorf("the upgrade replaced the edited conffile:\n%s", got)
	}
	r.requireFile("/etc/leafbox/leafbox.yaml", 0o640, 0, gid)
	r.requireFile("/var/lib/leafbox", fs.ModeDir|0o750, uid, gid)
	if sha256Of(t, identity) != id1 {
		t.Error("the upgrade changed the gateway identity")
	}
	if u, g := r.user("leafbox"); u != uid || g != gid {
		t.Errorf("leafbox is %d:%d after the upgrade, was %d:%d", u, g, uid, gid)
	}
	if got := r.asService("config", "print"); !strings.Contains(got, "\nserver_name: site-7\n") {
		t.Errorf("config print (no FILE) does not read the edited /etc/leafbox/leafbox.yaml:\n%s", got)
	}

	// Purge: the files, the conffile, the store and the enablement go; the
	// user stays (Debian keeps system users).
	out = r.run("dpkg", "--purge", "leafbox")
	t.Logf("dpkg --purge leafbox:\n%s", out)
	// A purged package leaves dpkg's database.
	if out, err := r.command("", nil, "dpkg-query", "--show", "leafbox").CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "no packages found matching leafbox") {
		t.Errorf("after purge dpkg-query --show leafbox: %v\n%s", err, out)
	}
	for _, p := range []string{"/usr/bin/leafbox", "/etc/leafbox", "/lib/systemd/system/leafbox.service", "/var/lib/leafbox",
		"/etc/systemd/system/multi-user.target.wants/leafbox.service", "/var/lib/systemd/deb-systemd-helper-enabled/leafbox.service.dsh-also"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is left after purge (%v)", p, err)
		}
	}
	if u, _ := r.user("leafbox"); u != uid {
		t.Errorf("the leafbox user changed on purge: uid %d", u)
	}
}

// packageUnits returns the systemd units the package ships, by name, as
// wantPackageFiles lists them.
func packageUnits() []string {
	var units []string
	for _, f := range wantPackageFiles {
		path := f[strings.LastIndexByte(f, ' ')+1:]
		if dir, name := filepath.Split(path); dir == "./lib/systemd/system/" && name != "" {
			units = append(units, name)
		}
	}
	return units
}

// rpiUnits are the units firmware/rpi/prepare-sd puts on a card's root
// partition (TestRaspberryPiFirstBoot verifies them there).
var rpiUnits = []string{"leafbox-firstboot.service"}

// verifyUnits runs `systemd-analyze verify --root=root` on each unit,
// installed in root, and wants it silent: no error and no warning.
func verifyUnits(t *testing.T, root string, units ...string) {
	t.Helper()
	if len(units) == 0 {
		t.Fatal("no units to verify")
	}
	for _, unit := range units {
		out, err := exec.Command("systemd-analyze", "verify", "--root="+root, unit).CombinedOutput()
		if err != nil || len(out) > 0 {
			t.Errorf("systemd-analyze verify --root=%s %s: %v\n%s", root, unit, err, out)
		} else {
			t.Logf("systemd-analyze verify --root=%s %s: no error, no warning", root, unit)
		}
	}
}

// TestEveryUnitIsVerified fails when a systemd unit under firmware/ is
// neither shipped by the package (verified by TestDebianPackages) nor put
// on the card by the Raspberry Pi recipe (verified by
// TestRaspberryPiFirstBoot): a new unit must be verified somewhere.
func TestEveryUnitIsVerified(t *testing.T) {
	verified := append(packageUnits(), rpiUnits...)
	var found []string
	err := filepath.WalkDir(filepath.Join(repoRoot(t), "firmware"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch filepath.Ext(path) {
		case ".service", ".socket", ".timer", ".path", ".mount", ".target":
			found = append(found, d.Name())
			if !slices.Contains(verified, d.Name()) {
				t.Errorf("%s is verified by no test: add it to wantPackageFiles (shipped) or rpiUnits (on the card)", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, unit := range verified {
		if !slices.Contains(found, unit) {
			t.Errorf("%s is listed as verified but no firmware/ file has that name", unit)
		}
	}
	t.Logf("units under firmware/: %v", found)
}

// chrootEnv runs commands in a Debian root.
type chrootEnv struct {
	t    *testing.T
	root string
}

// command is name with args inside the root, with a clean environment
// and no terminal (dpkg must never wait for an answer).
func (r chrootEnv) command(userspec string, env []string, name string, args ...string) *exec.Cmd {
	argv := []string{}
	if userspec != "" {
		argv = append(argv, "--userspec="+userspec)
	}
	argv = append(argv, r.root, "/usr/bin/env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	argv = append(argv, env...)
	cmd := exec.Command("chroot", append(append(argv, name), args...)...)
	cmd.Stdin = nil
	return cmd
}

// run runs name as root in the root and returns its trimmed output.
func (r chrootEnv) run(name string, args ...string) string {
	r.t.Helper()
	out, err := r.command("", nil, name, args...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("chroot %s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// serviceEnv is what systemd gives leafbox.service.
var serviceEnv = []string{"STATE_DIRECTORY=/var/lib/leafbox"}

// asService runs leafbox with args as the leafbox user, as the unit does.
func (r chrootEnv) asService(args ...string) string {
	r.t.Helper()
	out, err := r.command("leafbox:leafbox", serviceEnv, "/usr/bin/leafbox", args...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("as leafbox: leafbox %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// runService starts `leafbox run` as the service user on free loopback
// ports (the packaged defaults would take 4222 and 8222), with the
// packaged conffile, waits until it is ready, and stops it with SIGTERM.
func (r chrootEnv) runService() {
	r.t.Helper()
	var log syncBuffer
	cmd := r.command("leafbox:leafbox", serviceEnv, "/usr/bin/leafbox", "run", "--addr", "127.0.0.1", "--port", "-1", "--http-port", "0")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(log.String(), "ready for clients") {
		select {
		case err := <-done:
			r.t.Fatalf("leafbox run exited (%v) before it was ready:\n%s", err, log.String())
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			<-done
			r.t.Fatalf("leafbox run not ready within a minute:\n%s", log.String())
		case <-tick.C:
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		r.t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			r.t.Fatalf("leafbox run after SIGTERM: %v\n%s", err, log.String())
		}
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-done
		r.t.Fatalf("leafbox run did not stop:\n%s", log.String())
	}
	for _, want := range []string{"config=/etc/leafbox/leafbox.yaml", "store_dir=/var/lib/leafbox", "stopped"} {
		if !strings.Contains(log.String(), want) {
			r.t.Fatalf("leafbox run's log lacks %q:\n%s", want, log.String())
		}
	}
}

// requireInstalled fails unless dpkg has leafbox version installed.
func (r chrootEnv) requireInstalled(version string) {
	r.t.Helper()
	if got := r.run("dpkg-query", "--showformat=${Status} ${Version}", "--show", "leafbox"); got != "install ok installed "+version {
		r.t.Fatalf("dpkg-query: %q, want install ok installed %s", got, version)
	}
}

// passwdLine returns name's line in the root's /etc/passwd.
func (r chrootEnv) passwdLine(name string) string {
	r.t.Helper()
	for _, line := range strings.Split(string(readFile(r.t, filepath.Join(r.root, "etc/passwd"))), "\n") {
		if strings.HasPrefix(line, name+":") {
			return line
		}
	}
	r.t.Fatalf("no user %s in the root's /etc/passwd", name)
	return ""
}

// user returns name's uid and gid in the root.
func (r chrootEnv) user(name string) (uid, gid int) {
	r.t.Helper()
	f := strings.Split(r.passwdLine(name), ":")
	uid, err1 := strconv.Atoi(f[2])
	gid, err2 := strconv.Atoi(f[3])
	if err := errors.Join(err1, err2); err != nil {
		r.t.Fatal(err)
	}
	return uid, gid
}

// requireFile fails unless path in the root has mode and owner.
func (r chrootEnv) requireFile(path string, mode fs.FileMode, uid, gid int) {
	r.t.Helper()
	st, err := os.Lstat(filepath.Join(r.root, path))
	if err != nil {
		r.t.Fatalf("%s: %v", path, err)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if st.Mode() != mode || int(sys.Uid) != uid || int(sys.Gid) != gid {
		r.t.Errorf("%s: %v %d:%d, want %v %d:%d", path, st.Mode(), sys.Uid, sys.Gid, mode, uid, gid)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.WriteFile(dst, readFile(t, src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sha256Of(t *testing.T, path string) string {
	t.Helper()
	sum := sha256.Sum256(readFile(t, path))
	return hex.EncodeToString(sum[:])
}

// newRootDir returns a directory for a throwaway root, removed when t
// ends. It is in .cache/debootstrap, not in $TMPDIR: a /tmp mounted nodev
// (a tmpfs, as on Debian 13) would make the root's /dev/null unusable in
// the chroot.
func newRootDir(t *testing.T, repo string) string {
	t.Helper()
	cache := filepath.Join(repo, ".cache", "debootstrap")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(cache, "run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// debianRoot unpacks a fresh Debian root for arch into dir and returns
// it. The root is made by debootstrap from the mirror apt uses on this
// machine the first time, and kept in repo/.cache/debootstrap as a
// tarball (named after the suite, variant, architecture and included
// packages); later runs only unpack it.
func debianRoot(repo, arch, dir string, logf func(string, ...any)) (string, error) {
	cache := filepath.Join(repo, ".cache", "debootstrap")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	// One debootstrap at a time, should two test runs share the cache.
	lock, err := os.OpenFile(filepath.Join(cache, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	key := sha256.Sum256([]byte(strings.Join([]string{debSuite, debVariant, arch, debInclude}, " ")))
	tarball := filepath.Join(cache, fmt.Sprintf("%s-%s-%s-%s.tar", debSuite, debVariant, arch, hex.EncodeToString(key[:4])))
	if _, err := os.Stat(tarball); errors.Is(err, fs.ErrNotExist) {
		if err := debootstrap(cache, tarball, arch, logf); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	began := time.Now()
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		return "", err
	}
	if out, err := exec.Command("tar", "-C", root, "--numeric-owner", "-xpf", tarball).CombinedOutput(); err != nil {
		return "", fmt.Errorf("unpack %s: %v\n%s", tarball, err, out)
	}
	logf("unpacked the cached Debian root %s in %v", filepath.Base(tarball), time.Since(began).Round(100*time.Millisecond))
	return root, nil
}

// debootstrap makes the root and packs it into tarball.
func debootstrap(cache, tarball, arch string, logf func(string, ...any)) error {
	mirror := aptMirror()
	build := filepath.Join(cache, "build")
	if err := os.RemoveAll(build); err != nil { // a run that was interrupted
		return err
	}
	defer os.RemoveAll(build)
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "debootstrap", "--variant="+debVariant, "--arch="+arch, "--include="+debInclude, debSuite, build, mirror)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("debootstrap %s from %s: %v\n%s", debSuite, mirror, err, out)
	}
	took := time.Since(began)
	partial := tarball + ".partial"
	if out, err := exec.Command("tar", "-C", build, "--numeric-owner", "-cf", partial, ".").CombinedOutput(); err != nil {
		return fmt.Errorf("pack the Debian root: %v\n%s", err, out)
	}
	if err := os.Rename(partial, tarball); err != nil {
		return err
	}
	st, _ := os.Stat(tarball)
	logf("debootstrap --variant=%s --include=%s %s from %s: %v; cached as %s (%d MB)", debVariant, debInclude, debSuite, mirror,
		took.Round(time.Second), tarball, st.Size()>>20)
	return nil
}

// aptMirror returns the Debian archive apt uses on this machine: the
// first URI of a source for the suite's main component in
// /etc/apt/sources.list or /etc/apt/sources.list.d (one-line or deb822
// format), else deb.debian.org.
func aptMirror() string {
	files, _ := filepath.Glob("/etc/apt/sources.list.d/*")
	for _, path := range append([]string{"/etc/apt/sources.list"}, files...) {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		switch {
		case strings.HasSuffix(path, ".sources"):
			if uri := deb822Mirror(string(data)); uri != "" {
				return uri
			}
		case strings.HasSuffix(path, ".list"):
			if uri := listMirror(string(data)); uri != "" {
				return uri
			}
		}
	}
	return "http://deb.debian.org/debian"
}

// listMirror returns the URI of the first one-line source ("deb
// [options] URI SUITE COMPONENT...") for the suite's main component.
func listMirror(text string) string {
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) > 1 && strings.HasPrefix(f[1], "[") {
			end := slices.IndexFunc(f[1:], func(s string) bool { return strings.HasSuffix(s, "]") })
			if end < 0 {
				continue
			}
			f = slices.Delete(f, 1, end+2)
		}
		if len(f) >= 4 && f[0] == "deb" && f[2] == debSuite && slices.Contains(f[3:], "main") {
			return f[1]
		}
	}
	return ""
}

// deb822Mirror returns the first URI of a deb822 stanza that has the
// suite and the main component.
func deb822Mirror(text string) string {
	for _, stanza := range strings.Split(text, "\n\n") {
		fields := map[string][]string{}
		for _, line := range strings.Split(stanza, "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
				fields[strings.ToLower(strings.TrimSpace(k))] = strings.Fields(v)
			}
		}
		if slices.Contains(fields["types"], "deb") && slices.Contains(fields["suites"], debSuite) &&
			slices.Contains(fields["components"], "main") && len(fields["uris"]) > 0 {
			return fields["uris"][0]
		}
	}
	return ""
}

func TestAptMirror(t *testing.T) {
	deb822 := "Types: deb\n# a comment\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main contrib\n" +
		"Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n" +
		"Types: deb\nURIs: http://security.example/debian-security\nSuites: bookworm-security\nComponents: main\n"
	if got := deb822Mirror(deb822); got != "http://mirror.example/debian" {
		t.Errorf("deb822Mirror = %q", got)
	}
	if got := deb822Mirror("Types: deb-src\nURIs: http://x/debian\nSuites: bookworm\nComponents: main\n"); got != "" {
		t.Errorf("deb822Mirror took a deb-src stanza: %q", got)
	}
	for text, want := range map[string]string{
		"deb http://a/debian bookworm main\n":                                               "http://a/debian",
		"deb [arch=amd64 signed-by=/k.gpg] http://b/debian bookworm main contrib\n":         "http://b/debian",
		"# deb http://c/debian bookworm main\ndeb http://d/debian bookworm-updates main\n":  "",
		"deb http://e/debian bookworm contrib\ndeb [broken http://f/debian bookworm main\n": "",
	} {
		if got := listMirror(text); got != want {
			t.Errorf("listMirror(%q) = %q, want %q", text, got, want)
		}
	}
}
