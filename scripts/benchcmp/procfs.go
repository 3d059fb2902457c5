package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
)

// statusKB returns the value of a "Key:   1234 kB" line of
// /proc/PID/status text, in bytes. VmRSS is the resident set now, VmHWM
// the peak resident set ("high water mark") since the process started.
func statusKB(status, key string) (int64, error) {
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		name, rest, found := strings.Cut(sc.Text(), ":")
		if !found || name != key {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) != 2 || fields[1] != "kB" {
			return 0, fmt.Errorf("benchcmp: unexpected %s line %q", key, sc.Text())
		}
		kb, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("benchcmp: unexpected %s line %q", key, sc.Text())
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("benchcmp: no %s line in process status", key)
}

// readStatusKB reads key (VmRSS, VmHWM) from /proc/pid/status.
func readStatusKB(pid int, key string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("benchcmp: reading memory of pid %d: %w", pid, err)
	}
	return statusKB(string(b), key)
}

// cpuModel returns the processor name from /proc/cpuinfo text: the x86
// "model name" line, or on ARM boards the "Model" line (such as "Raspberry
// Pi 4 Model B Rev 1.4"), or "unknown CPU".
func cpuModel(cpuinfo string) string {
	var model, board string
	sc := bufio.NewScanner(strings.NewReader(cpuinfo))
	for sc.Scan() {
		name, value, found := strings.Cut(sc.Text(), ":")
		if !found {
			continue
		}
		name, value = strings.TrimSpace(name), strings.Join(strings.Fields(value), " ")
		switch {
		case name == "model name" && model == "" && value != "":
			model = value
		case name == "Model" && board == "" && value != "":
			board = value
		}
	}
	switch {
	case model != "":
		return model
	case board != "":
		return board
	}
	return "unknown CPU"
}

// loadAverage returns the 1-minute load average from /proc/loadavg text
// ("0.52 0.58 0.59 1/257 12345").
func loadAverage(loadavg string) (float64, error) {
	fields := strings.Fields(loadavg)
	if len(fields) == 0 {
		return 0, fmt.Errorf("benchcmp: empty load average")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	if err != nil {
		return 0, fmt.Errorf("benchcmp: load average %q: %w", fields[0], err)
	}
	return v, nil
}

// readLoadAverage returns the 1-minute load average, or -1 if unknown.
func readLoadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	v, err := loadAverage(string(b))
	if err != nil {
		return -1
	}
	return v
}

// hostMachine describes the machine this program runs on, with the load
// average now as LoadStart; the caller sets LoadEnd.
func hostMachine() machineInfo {
	m := machineInfo{
		CPUs:      runtime.NumCPU(),
		CPUModel:  "unknown CPU",
		Platform:  runtime.GOOS + "/" + runtime.GOARCH,
		Go:        runtime.Version(),
		LoadStart: readLoadAverage(),
		LoadEnd:   -1,
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPUModel = cpuModel(string(b))
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// rssSteady reports whether the last n readings lie within tol (a
// fraction) of the largest of them: the resident set has stopped moving.
// It is false with fewer than n readings.
func rssSteady(readings []int64, n int, tol float64) bool {
	if n < 1 || len(readings) < n {
		return false
	}
	last := readings[len(readings)-n:]
	lo, hi := slices.Min(last), slices.Max(last)
	return float64(hi-lo) <= tol*float64(hi)
}

// clockTicks is USER_HZ, the unit of the CPU times in /proc/PID/stat: 100
// on every Linux architecture (the kernel converts to it for user space).
const clockTicks = 100

// statCPU returns the CPU time (user + system) that /proc/PID/stat text
// reports, as seconds. The command name (field 2) is in parentheses and
// may hold spaces or parentheses itself, so the fields are counted after
// the last ')': utime and stime are the 14th and 15th of the line.
func statCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("benchcmp: process stat %q has no command name", stat)
	}
	fields := strings.Fields(stat[i+1:]) // field 3 (state) onwards
	if len(fields) < 13 {
		return 0, fmt.Errorf("benchcmp: process stat has %d fields after the name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("benchcmp: process stat CPU time %q", f)
		}
		ticks += n
	}
	return float64(ticks) / clockTicks, nil
}

// readCPU reads the CPU time the process pid has used so far, in seconds.
func readCPU(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("benchcmp: reading CPU time of pid %d: %w", pid, err)
	}
	return statCPU(string(b))
}
