package upgrade

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// PrevSuffix names the kept old binary: leafbox.prev beside leafbox.
const PrevSuffix = ".prev"

// elfMachines maps GOARCH to the ELF machine of its binaries.
var elfMachines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"arm":     elf.EM_ARM,
	"386":     elf.EM_386,
	"riscv64": elf.EM_RISCV,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
}

// CheckArch checks that path is an ELF executable for this machine's
// architecture (runtime.GOARCH).
func CheckArch(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) {
			return fmt.Errorf("upgrade: %s is not an ELF executable: %v", path, err)
		}
		return fmt.Errorf("upgrade: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("upgrade: %s is an ELF %s, not an executable", path, f.Type)
	}
	want, ok := elfMachines[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("upgrade: cannot check binaries for %s", runtime.GOARCH)
	}
	if f.Machine != want {
		return fmt.Errorf("upgrade: %s is built for %s, this gateway runs %s (%s)", path, f.Machine, want, runtime.GOARCH)
	}
	return nil
}

// CheckRuns runs `path version` and returns its first line ("leafbox
// v1.2.3"), failing unless it exits 0 within timeout and names leafbox.
func CheckRuns(ctx context.Context, path string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "version")
	cmd.Env = append(os.Environ(), "LEAFBOX_CONFIG=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", fmt.Errorf("upgrade: %s version did not finish within %v", path, timeout)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	if err != nil {
		return "", fmt.Errorf("upgrade: %s version: %v: %s", path, err, first)
	}
	if !strings.HasPrefix(first, "leafbox ") {
		return "", fmt.Errorf("upgrade: %s version printed %q, not a leafbox version", path, first)
	}
	return first, nil
}

// Swap puts newPath's content at target atomically (a rename in target's
// directory, so a reader sees the old binary or the new, never part of
// one) and keeps the old binary as target+PrevSuffix, replacing an older
// one. The new file takes the old one's mode. newPath is left as it is.
func Swap(target, newPath string) error {
	info, err := os.Stat(target)
	if err != nil {
		return fmt.Errorf("upgrade: the binary to replace: %w", err)
	}
	dir := filepath.Dir(target)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(target)+".new-*")
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing
	src, err := os.Open(newPath)
	if err != nil {
		tmp.Close()
		return fmt.Errorf("upgrade: %w", err)
	}
	_, err = io.Copy(tmp, src)
	src.Close()
	if err == nil {
		err = tmp.Chmod(info.Mode().Perm())
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("upgrade: write %s: %w", tmp.Name(), err)
	}
	prev := target + PrevSuffix
	if err := os.Remove(prev); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("upgrade: %w", err)
	}
	// A hard link keeps the old binary without a moment where target is
	// missing; a copy where links do not work.
	if err := os.Link(target, prev); err != nil {
		if err := copyFile(target, prev, info.Mode().Perm()); err != nil {
			return fmt.Errorf("upgrade: keep the old binary: %w", err)
		}
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	return syncDir(dir)
}

// Restore puts target+PrevSuffix back at target.
func Restore(target string) error {
	prev := target + PrevSuffix
	if err := os.Rename(prev, target); err != nil {
		return fmt.Errorf("upgrade: put the old binary back: %w", err)
	}
	// The old binary stays kept as well, for a later look.
	if err := os.Link(target, prev); err != nil {
		_ = err // the kept copy is a convenience
	}
	return syncDir(filepath.Dir(target))
}

func copyFile(from, to string, mode os.FileMode) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if err == nil {
		err = dst.Sync()
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("upgrade: sync %s: %w", dir, err)
	}
	return nil
}
