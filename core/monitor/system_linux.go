package monitor

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// systemMemory reads MemTotal and MemAvailable from /proc/meminfo, in
// bytes; zeros when it cannot.
func systemMemory() (total, available int64) {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, 0
	}
	return parseMeminfo(b)
}

// parseMeminfo reads the "MemTotal:  1024 kB" and "MemAvailable:" lines.
func parseMeminfo(b []byte) (total, available int64) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		name, rest, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		var dst *int64
		switch string(name) {
		case "MemTotal":
			dst = &total
		case "MemAvailable":
			dst = &available
		default:
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(string(fields[0]), 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && string(fields[1]) == "kB" {
			n *= 1024
		}
		*dst = n
	}
	return total, available
}

// diskSpace returns the size of the file system holding dir and the
// space unprivileged writers may still use, in bytes.
func diskSpace(dir string) (total, available uint64, ok bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, false
	}
	bsize := uint64(st.Bsize)
	return st.Blocks * bsize, st.Bavail * bsize, true
}
