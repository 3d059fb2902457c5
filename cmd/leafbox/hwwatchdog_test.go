package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `leafbox run` with a watchdog block feeds the device (here a regular
// file) one byte an interval while healthy and writes the magic close "V"
// on SIGTERM; it logs the memory limit it set at start.
func TestRunFeedsTheHardwareWatchdog(t *testing.T) {
	dir := t.TempDir()
	dev := filepath.Join(dir, "watchdog")
	if err := os.WriteFile(dev, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "leafbox.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "listen: 127.0.0.1:-1\nhttp_port: 0\nmemory_limit: 200MiB\n"+
		"jetstream: {store_dir: %q}\nwatchdog: {device: %q, interval: 50ms}\n", filepath.Join(dir, "store"), dev), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startEnv(t, []string{"LEAFBOX_CONFIG=" + conf, "GOMEMLIMIT="}, "run")
	p.waitLog("ready for clients")
	// The watchdog's first line can follow "ready for clients".
	p.waitLog("feeding the hardware watchdog")
	requireLogContains(t, p, "memory limit", "limit=200MiB", "feeding the hardware watchdog", "interval=50ms")

	deadline := time.After(waitTimeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(dev)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) >= 3 {
			break
		}
		select {
		case <-deadline:
			t.Fatalf("watchdog fed %q within %v", b, waitTimeout)
		case <-tick.C:
		}
	}
	p.signal(syscall.SIGTERM)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit code %d after SIGTERM; log:\n%s", code, p.log())
	}
	b, err := os.ReadFile(dev)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(b); !strings.HasSuffix(s, "V") || strings.Trim(s[:len(s)-1], ".") != "" {
		t.Fatalf("watchdog device got %q, want feeds then V", s)
	}
}
