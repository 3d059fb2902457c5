//go:build linux

package scripts

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestRaspberryPiFirstBoot exercises the Raspberry Pi recipe
// (firmware/rpi) against a staged card: a throwaway Debian root as the
// root partition with a folder as its boot partition (/boot/firmware, as
// Raspberry Pi OS mounts it). prepare-sd puts the package, the site
// configuration and a credential on it; leafbox-firstboot, run in the
// root as its unit would run it, installs them; a second boot does
// nothing.
func TestRaspberryPiFirstBoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: debootstrap and chroot (the test command runs as root)")
	}
	for _, tool := range []string{"dpkg-deb", "debootstrap", "chroot"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: scripts/test installs it (apt-get install debootstrap)", tool)
		}
	}
	native := slices.IndexFunc(debArches, func(a debArch) bool { return a.goarch == runtime.GOARCH })
	if native < 0 {
		t.Fatalf("no Debian package for this machine (GOARCH %s)", runtime.GOARCH)
	}
	repo := repoRoot(t)
	deb := runPackage(t, t.TempDir(), []string{"VERSION=1.0.0"}, debArches[native].name)[debArches[native].name]
	root, err := debianRoot(repo, debArches[native].name, newRootDir(t, repo), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	r := chrootEnv{t: t, root: root}

	// The site's files, as the technician has them.
	site := t.TempDir()
	config := "# site pi-17\nserver_name: pi-17\n"
	cred := "-----BEGIN NATS USER JWT-----\nnot a real one\n------END NATS USER JWT------\n"
	writeFile(t, filepath.Join(site, "leafbox.yaml"), config)
	writeFile(t, filepath.Join(site, "hub.creds"), cred)

	boot := filepath.Join(root, "boot", "firmware")
	if err := os.MkdirAll(boot, 0o755); err != nil {
		t.Fatal(err)
	}
	prepare := func() string {
		cmd := exec.Command(filepath.Join(repo, "firmware", "rpi", "prepare-sd"), boot, root, deb,
			filepath.Join(site, "leafbox.yaml"), filepath.Join(site, "hub.creds"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("prepare-sd: %v\n%s", err, out)
		}
		return string(out)
	}
	t.Log(prepare())
	t.Log(prepare()) // run twice, the card is the same
	for path, want := range map[string]string{
		"leafbox/leafbox.yaml":          config,
		"leafbox/credentials/hub.creds": cred,
	} {
		if got := string(readFile(t, filepath.Join(boot, path))); got != want {
			t.Errorf("boot partition %s: %q, want %q", path, got, want)
		}
	}
	if sha256Of(t, filepath.Join(boot, "leafbox/leafbox.deb")) != sha256Of(t, deb) {
		t.Error("boot partition leafbox/leafbox.deb is not the package")
	}
	r.requireFile("/usr/local/sbin/leafbox-firstboot", 0o755, 0, 0)
	r.requireFile("/etc/systemd/system/leafbox-firstboot.service", 0o644, 0, 0)
	r.requireFile("/etc/systemd/journald.conf.d/leafbox-sd-wear.conf", 0o644, 0, 0)
	wants := "/etc/systemd/system/multi-user.target.wants/"
	if link, err := os.Readlink(filepath.Join(root, wants, "leafbox-firstboot.service")); err != nil || link != "../leafbox-firstboot.service" {
		t.Fatalf("first-boot unit not enabled: %q, %v", link, err)
	}

	// The card's units in their staged place, before first boot.
	verifyUnits(t, root, rpiUnits...)

	// First boot.
	out := r.run("/usr/local/sbin/leafbox-firstboot")
	t.Logf("first boot:\n%s", out)
	r.requireInstalled("1.0.0")
	_, gid := r.user("leafbox")
	r.requireFile("/etc/leafbox/leafbox.yaml", 0o640, 0, gid)
	r.requireFile("/etc/leafbox/credentials", os.ModeDir|0o750, 0, gid)
	r.requireFile("/etc/leafbox/credentials/hub.creds", 0o640, 0, gid)
	if got := string(readFile(t, filepath.Join(root, "etc/leafbox/leafbox.yaml"))); got != config {
		t.Errorf("/etc/leafbox/leafbox.yaml is %q, want the site's %q (dpkg must keep it)", got, config)
	}
	if got := string(readFile(t, filepath.Join(root, "etc/leafbox/credentials/hub.creds"))); got != cred {
		t.Errorf("hub.creds is %q, want %q", got, cred)
	}
	if _, err := os.Stat(filepath.Join(boot, "leafbox")); !os.IsNotExist(err) {
		t.Errorf("the boot partition still has leafbox/ (%v): the secrets must leave the FAT partition", err)
	}
	if link, err := os.Readlink(filepath.Join(root, wants, "leafbox.service")); err != nil || !strings.HasSuffix(link, "/leafbox.service") {
		t.Errorf("leafbox.service not enabled: %q, %v", link, err)
	}
	if _, err := os.Lstat(filepath.Join(root, wants, "leafbox-firstboot.service")); !os.IsNotExist(err) {
		t.Errorf("the first-boot unit is still enabled (%v)", err)
	}
	// The package's units as first boot installed them, beside the card's.
	verifyUnits(t, root, append(packageUnits(), rpiUnits...)...)
	// The service user reads the site configuration.
	if out := r.asService("config", "check", "/etc/leafbox/leafbox.yaml"); !strings.Contains(out, "ok") {
		t.Errorf("config check as the service user: %s", out)
	}

	// Second boot: nothing happens (the unit is off and its condition
	// fails; run anyway, the script changes nothing).
	before := snapshot(t, filepath.Join(root, "etc/leafbox"))
	out = r.run("/usr/local/sbin/leafbox-firstboot")
	if !strings.Contains(out, "nothing to do") {
		t.Errorf("second boot: %q, want nothing to do", out)
	}
	if after := snapshot(t, filepath.Join(root, "etc/leafbox")); !slices.Equal(before, after) {
		t.Errorf("second boot changed /etc/leafbox:\n%v\n%v", before, after)
	}
	r.requireInstalled("1.0.0")
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// snapshot lists every file under dir with its mode, size and mtime.
func snapshot(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		files = append(files, fmt.Sprintf("%s %v %d %v", path, info.Mode(), info.Size(), info.ModTime()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
