package main

import (
	"os"
	"strings"
	"testing"
	"time"
)

const statusText = `Name:	nats-server
Umask:	0022
State:	S (sleeping)
Pid:	22030
VmPeak:	 1253284 kB
VmSize:	 1253284 kB
VmHWM:	   22016 kB
VmRSS:	   15256 kB
RssAnon:	    6272 kB
Threads:	8
`

func TestStatusKB(t *testing.T) {
	tests := []struct {
		key     string
		want    int64
		wantErr string
	}{
		{"VmRSS", 15256 * 1024, ""},
		{"VmHWM", 22016 * 1024, ""},
		{"VmSwap", 0, "no VmSwap line"},
		{"Threads", 0, "unexpected Threads line"},
		{"Vm", 0, "no Vm line"}, // a prefix of a key is not the key
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			got, err := statusKB(statusText, tc.key)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("statusKB(%s) = %d, %v; want %d", tc.key, got, err, tc.want)
			}
		})
	}
}

func TestReadStatusKBOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc")
	}
	rss, err := readStatusKB(os.Getpid(), "VmRSS")
	if err != nil || rss <= 0 {
		t.Fatalf("VmRSS of this test = %d, %v", rss, err)
	}
	hwm, err := readStatusKB(os.Getpid(), "VmHWM")
	if err != nil || hwm < rss {
		t.Fatalf("VmHWM = %d, %v; want at least VmRSS %d", hwm, err, rss)
	}
}

func TestCPUModel(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"x86", "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13  64-Core Processor\nprocessor\t: 1\nmodel name\t: AMD EPYC 7B13 64-Core Processor\n",
			"AMD EPYC 7B13 64-Core Processor"},
		{"raspberry pi", "processor\t: 0\nBogoMIPS\t: 108.00\nCPU part\t: 0xd08\n\nHardware\t: BCM2835\nModel\t\t: Raspberry Pi 4 Model B Rev 1.4\n",
			"Raspberry Pi 4 Model B Rev 1.4"},
		{"x86 model name wins over Model", "Model\t: board\nmodel name\t: Intel Xeon\n", "Intel Xeon"},
		{"nothing", "processor : 0\n", "unknown CPU"},
		{"empty value", "model name\t:\n", "unknown CPU"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := cpuModel(tc.in); got != tc.want {
				t.Errorf("cpuModel = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoadAverage(t *testing.T) {
	if got, err := loadAverage("0.52 0.58 0.59 1/257 12345\n"); err != nil || got != 0.52 {
		t.Errorf("loadAverage = %g, %v; want 0.52", got, err)
	}
	for _, bad := range []string{"", "busy 1 2"} {
		if _, err := loadAverage(bad); err == nil {
			t.Errorf("loadAverage(%q): no error", bad)
		}
	}
}

func TestRSSSteady(t *testing.T) {
	tests := []struct {
		name     string
		readings []int64
		want     bool
	}{
		{"too few readings", []int64{100, 100}, false},
		{"flat", []int64{100, 100, 100}, true},
		{"within 1 %", []int64{1000, 995, 1000}, true},
		{"still growing", []int64{900, 950, 1000}, false},
		{"only the last n count", []int64{10, 500, 1000, 1000, 1000}, true},
		{"falling", []int64{1000, 1000, 980}, false},
	}
	for _, tc := range tests {
		if got := rssSteady(tc.readings, 3, 0.01); got != tc.want {
			t.Errorf("%s: rssSteady(%v) = %v, want %v", tc.name, tc.readings, got, tc.want)
		}
	}
	if rssSteady([]int64{1}, 0, 0.01) {
		t.Error("a window of 0 readings is never steady")
	}
}

func TestStatCPU(t *testing.T) {
	// A command name with a space and a ')' of its own; utime 1234 and
	// stime 566 ticks are the 14th and 15th fields.
	const stat = "4242 (odd) name) S 1 4242 4242 0 -1 4194560 1900 0 0 0 1234 566 0 0 20 0 9 0 12345 1253284 3814 18446744073709551615\n"
	got, err := statCPU(stat)
	if err != nil || got != 18.0 {
		t.Fatalf("statCPU = %v, %v; want 18 s", got, err)
	}
	for _, bad := range []string{"", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 4194560 1900 0 0 0 12x4 566 0"} {
		if _, err := statCPU(bad); err == nil {
			t.Errorf("statCPU(%q) gave no error", bad)
		}
	}
}

func TestReadCPUOfThisProcessGrows(t *testing.T) {
	before, err := readCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the kernel's tick-based account moves (a few ticks).
	x := uint64(1)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("CPU time stayed at %v s through 10 s of work", before)
		}
		for range 1 << 20 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		now, err := readCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now > before {
			break
		}
	}
	if x == 0 {
		t.Log(x) // keeps the loop from being optimised away
	}
}
