package upgrade

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// elfHeader returns the first 20 bytes of an ELF header: identification,
// e_type and e_machine in the byte order data names.
func elfHeader(class, data byte, typ, machine uint16) []byte {
	h := []byte{0x7f, 'E', 'L', 'F', class, data, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	put := func(off int, v uint16) {
		if data == 2 {
			h[off], h[off+1] = byte(v>>8), byte(v)
		} else {
			h[off], h[off+1] = byte(v), byte(v>>8)
		}
	}
	put(16, typ)
	put(18, machine)
	return append(h, make([]byte, 44)...) // the rest of a 64-bit header
}

func TestCheckArchHeader(t *testing.T) {
	want, ok := archOf(runtime.GOARCH)
	if !ok {
		t.Fatalf("no ELF fields for GOARCH %s", runtime.GOARCH)
	}
	other := uint16(183) // EM_AARCH64
	if want.machine == other {
		other = 62 // EM_X86_64
	}
	otherClass := byte(3 - want.class)
	otherData := byte(3 - want.data)
	cases := []struct {
		name    string
		content []byte
		err     string // "" for none
	}{
		{"exec", elfHeader(want.class, want.data, 2, want.machine), ""},
		{"pie", elfHeader(want.class, want.data, 3, want.machine), ""},
		{"empty", nil, "is not an ELF executable: shorter than an ELF header"},
		{"short", elfHeader(want.class, want.data, 2, want.machine)[:19], "shorter than an ELF header"},
		{"script", []byte("#!/bin/sh\necho leafbox v1\n"), "is not an ELF executable: bad magic number"},
		{"bad class", elfHeader(0, want.data, 2, want.machine), "bad identification (class 0"},
		{"bad data", elfHeader(want.class, 7, 2, want.machine), "bad identification (class"},
		{"relocatable", elfHeader(want.class, want.data, 1, want.machine), "is an ELF of type 1, not an executable"},
		{"core", elfHeader(want.class, want.data, 4, want.machine), "is an ELF of type 4, not an executable"},
		{"other machine", elfHeader(want.class, want.data, 2, other), "is built for " + machineName(other) + ", this gateway runs " + machineName(want.machine)},
		{"unknown machine", elfHeader(want.class, want.data, 2, 9999), "is built for ELF machine 9999"},
		{"other class", elfHeader(otherClass, want.data, 2, want.machine), "-bit"},
		{"other byte order", elfHeader(want.class, otherData, 2, want.machine), "this gateway runs"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, c.name)
			require.NoError(t, os.WriteFile(path, c.content, 0o755))
			err := CheckArch(path)
			if c.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, c.err)
		})
	}
	require.ErrorContains(t, CheckArch(filepath.Join(dir, "missing")), "no such file")
}

func TestMachineNames(t *testing.T) {
	require.Equal(t, machineName(183), "EM_AARCH64")
	require.Equal(t, machineName(40), "EM_ARM")
	require.Equal(t, machineName(1), "ELF machine 1")
	_, ok := archOf("mips")
	require.Equal(t, ok, false)
}

// FuzzCheckArch: any file content gives an answer, never a panic.
func FuzzCheckArch(f *testing.F) {
	f.Add(elfHeader(2, 1, 2, 62))
	f.Add(elfHeader(1, 2, 3, 40)[:20])
	f.Add([]byte("#!/bin/sh\n"))
	path := filepath.Join(f.TempDir(), "bin")
	f.Fuzz(func(t *testing.T, content []byte) {
		if err := os.WriteFile(path, content, 0o755); err != nil {
			t.Fatal(err)
		}
		_ = CheckArch(path)
	})
}
