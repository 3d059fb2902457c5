package app

import (
	"fmt"
	"strings"
	"testing"
)

// TestNatsCLIJetStream drives the gateway's JetStream with the official
// nats CLI the way operators do: it creates a stream (the CLI sends
// Nats-Required-Api-Level with its requests), benchmarks publishing into
// it with --create, and reads the stream's state back.
func TestNatsCLIJetStream(t *testing.T) {
	a := startApp(t, fmt.Sprintf("http_port: -1\njetstream: {enabled: true, store_dir: %q}\n", t.TempDir()), Flags{})
	url := "nats://" + a.Addr().String()
	runNatsCLI(t, url, "stream", "add", "ORDERS", "--subjects", "orders.>", "--storage", "file", "--defaults")
	runNatsCLI(t, url, "bench", "js", "pub", "async", "bench.x", "--create", "--stream", "BENCH", "--storage", "memory",
		"--msgs", "200", "--size", "16", "--batch", "50", "--no-progress")
	runNatsCLI(t, url, "pub", "orders.1", "one", "--jetstream")
	out := string(runNatsCLI(t, url, "stream", "info", "BENCH", "--json"))
	if !strings.Contains(out, `"messages": 200`) {
		t.Fatalf("BENCH after the benchmark:\n%s", out)
	}
	out = string(runNatsCLI(t, url, "stream", "info", "ORDERS", "--json"))
	if !strings.Contains(out, `"messages": 1`) {
		t.Fatalf("ORDERS after one publish:\n%s", out)
	}
}
