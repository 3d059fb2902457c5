package upgrade

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// PrevSuffix names the kept old binary: leafbox.prev beside leafbox.
const PrevSuffix = ".prev"

// elfArch is what the ELF header of a binary for one GOARCH holds: its
// e_machine (named as the ELF specification does), its class (EI_CLASS: 1
// for 32-bit, 2 for 64-bit) and its byte order (EI_DATA: 1 for
// little-endian, 2 for big-endian).
type elfArch struct {
	goarch  string
	machine uint16
	name    string
	class   byte
	data    byte
}

// elfArches lists the ELF header fields of each GOARCH's binaries (a
// table, not a map: static data, no code to build it at start).
var elfArches = []elfArch{
	{"amd64", 62, "EM_X86_64", 2, 1},
	{"arm64", 183, "EM_AARCH64", 2, 1},
	{"arm", 40, "EM_ARM", 1, 1},
	{"386", 3, "EM_386", 1, 1},
	{"riscv64", 243, "EM_RISCV", 2, 1},
	{"ppc64le", 21, "EM_PPC64", 2, 1},
	{"s390x", 22, "EM_S390", 2, 2},
}

// archOf returns the ELF fields of goarch's binaries.
func archOf(goarch string) (elfArch, bool) {
	for _, a := range elfArches {
		if a.goarch == goarch {
			return a, true
		}
	}
	return elfArch{}, false
}

// machineName is the ELF specification's name of e_machine m.
func machineName(m uint16) string {
	for _, a := range elfArches {
		if a.machine == m {
			return a.name
		}
	}
	return "ELF machine " + strconv.Itoa(int(m))
}

// ELF header offsets and values (the System V ABI's ELF header; the same
// for 32- and 64-bit files up to e_machine).
const (
	elfIdentClass   = 4  // e_ident[EI_CLASS]
	elfIdentData    = 5  // e_ident[EI_DATA]
	elfIdentVersion = 6  // e_ident[EI_VERSION], 1 (EV_CURRENT)
	elfType         = 16 // e_type, 2 bytes
	elfMachine      = 18 // e_machine, 2 bytes
	elfHeaderPrefix = 20 // bytes read: e_ident, e_type, e_machine
	elfTypeExec     = 2  // ET_EXEC
	elfTypeDyn      = 3  // ET_DYN (a position-independent executable)
)

// CheckArch checks that path is an ELF executable for this machine's
// architecture (runtime.GOARCH): it reads the ELF header's identification,
// e_type and e_machine.
func CheckArch(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	defer f.Close()
	var h [elfHeaderPrefix]byte
	if _, err := io.ReadFull(f, h[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("upgrade: %s is not an ELF executable: shorter than an ELF header", path)
		}
		return fmt.Errorf("upgrade: %w", err)
	}
	if string(h[:4]) != "\x7fELF" {
		return fmt.Errorf("upgrade: %s is not an ELF executable: bad magic number %q", path, h[:4])
	}
	class, data := h[elfIdentClass], h[elfIdentData]
	if (class != 1 && class != 2) || (data != 1 && data != 2) || h[elfIdentVersion] != 1 {
		return fmt.Errorf("upgrade: %s is not an ELF executable: bad identification (class %d, data %d, version %d)",
			path, class, data, h[elfIdentVersion])
	}
	u16 := func(b []byte) uint16 {
		if data == 2 {
			return uint16(b[0])<<8 | uint16(b[1])
		}
		return uint16(b[1])<<8 | uint16(b[0])
	}
	if typ := u16(h[elfType:]); typ != elfTypeExec && typ != elfTypeDyn {
		return fmt.Errorf("upgrade: %s is an ELF of type %d, not an executable (ET_EXEC or ET_DYN)", path, typ)
	}
	want, ok := archOf(runtime.GOARCH)
	if !ok {
		return fmt.Errorf("upgrade: cannot check binaries for %s", runtime.GOARCH)
	}
	if m := u16(h[elfMachine:]); m != want.machine {
		return fmt.Errorf("upgrade: %s is built for %s, this gateway runs %s (%s)",
			path, machineName(m), want.name, runtime.GOARCH)
	}
	if class != want.class || data != want.data {
		return fmt.Errorf("upgrade: %s is a %d-bit %s ELF, this gateway runs %d-bit %s (%s)",
			path, 32*int(class), endianName(data), 32*int(want.class), endianName(want.data), runtime.GOARCH)
	}
	return nil
}

// endianName names an EI_DATA byte order.
func endianName(data byte) string {
	if data == 2 {
		return "big-endian"
	}
	return "little-endian"
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
