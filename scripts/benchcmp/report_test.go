package main

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testReport() report {
	return report{
		Labels:   [2]string{"leafbox", "nats-server"},
		Versions: [2]string{"v0.1.0", "v2.15.2"},
		Tool:     "natscli v0.5.0",
		Machine: machineInfo{CPUs: 2, CPUModel: "AMD EPYC", Platform: "linux/amd64", Kernel: "6.1.0", Go: "go1.26.8",
			LoadStart: 0.25, LoadEnd: 1.5},
		Date:     time.Date(2026, 11, 29, 8, 1, 0, 0, time.UTC),
		Rounds:   3,
		Workload: []string{"Publish-only: 1,000,000 messages"},
		Metrics: []metricResult{
			{
				metric: metric{Name: "publish-only 16 B", Unit: unitRate, Better: higherIsBetter},
				Values: [2][]float64{{2_100_000, 2_300_000, 2_200_000}, {2_000_000, 2_000_000, 1_900_000}},
			},
			{
				metric: metric{Name: "request-reply p99 latency", Unit: unitMicros, Better: lowerIsBetter},
				Values: [2][]float64{{400, 500, 450}, {500, 500, 500}},
			},
			{
				metric: metric{Name: "1 publisher → 4 subscribers 16 B", Unit: unitRate, Better: higherIsBetter},
				Values: [2][]float64{{100}, {200, 200, 200}},
				Failed: [2]string{"nats bench sub: timed out, killed", ""},
			},
			{
				metric: metric{Name: "request-reply", Unit: unitRequests, Better: higherIsBetter},
				Values: [2][]float64{nil, {3900, 3800, 4000}},
				Failed: [2]string{"nats bench service request: exit status 1", ""},
			},
			{
				metric: metric{Name: "idle RSS", Unit: unitMiB, Better: lowerIsBetter},
				Values: [2][]float64{{9.5}, {14.9}},
			},
		},
		Notes:  []string{"Sync policy: a note."},
		Errors: []string{"request-reply on leafbox, round 1: exit status 1"},
	}
}

func TestRenderMarkdownTable(t *testing.T) {
	var b strings.Builder
	if err := renderMarkdown(&b, testReport()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"### leafbox vs nats-server\n",
		"- Date: 2026-11-29 08:01 UTC\n",
		"- Machine: 2 CPUs, AMD EPYC, linux/amd64, kernel 6.1.0\n",
		"- Go: go1.26.8\n",
		"- Load average (1 min): 0.25 at start, 1.50 at end; other processes competed for the CPUs, so expect noise\n",
		"- Servers: leafbox v0.1.0; nats-server v2.15.2; load from natscli v0.5.0, all on loopback\n",
		"- Rounds: 3;",
		"- Publish-only: 1,000,000 messages\n",
		"| Row | leafbox | nats-server | leafbox/nats-server | Better |\n|---|--:|--:|--:|---|\n",
		"| publish-only 16 B, msgs/s | 2,200,000 | 2,000,000 | 1.10× | higher |\n",
		"| request-reply p99 latency, µs | 450.0 | 500.0 | 0.90× | lower |\n",
		"**Not for publication: 1 harness failures (listed under Failures); rows with a failed round show no figure.**\n\n",
		"| 1 publisher → 4 subscribers 16 B, msgs/s | failed (1/3 rounds passed) | 200 | n/a | higher |\n",
		"| request-reply, req/s | failed | 3,900 | n/a | higher |\n",
		"| idle RSS, MiB | 9.5 | 14.9 | 0.64× | lower |\n",
		"Ratio is leafbox ÷ nats-server",
		"at or below 1.00× where it says lower.\n\nSync policy: a note.\n\nFailures:\n\n- request-reply on leafbox, round 1: exit status 1\n",
		"<details><summary>Values per round</summary>\n\n| Row | leafbox | nats-server |\n|---|---|---|\n",
		"| publish-only 16 B, msgs/s | 2,100,000 · 2,300,000 · 2,200,000 | 2,000,000 · 2,000,000 · 1,900,000 |\n",
		"| 1 publisher → 4 subscribers 16 B, msgs/s | 100 · failed | 200 · 200 · 200 |\n",
		"| request-reply, req/s | failed | 3,900 · 3,800 · 4,000 |\n",
		"\n</details>\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q\n--- output ---\n%s", want, out)
		}
	}
}

func TestRenderMarkdownWithoutFailures(t *testing.T) {
	r := testReport()
	r.Errors = nil
	r.Machine.Kernel = ""
	r.Machine.LoadStart, r.Machine.LoadEnd = 0.1, 0.2
	var b strings.Builder
	if err := renderMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, unwanted := range []string{"Failures", "Not for publication", "kernel", "expect noise"} {
		if strings.Contains(out, unwanted) {
			t.Errorf("output contains %q:\n%s", unwanted, out)
		}
	}
	if !strings.Contains(out, "- Load average (1 min): 0.10 at start, 0.20 at end\n") {
		t.Errorf("output lacks the quiet load average:\n%s", out)
	}
}

func TestCellText(t *testing.T) {
	mr := metricResult{metric: metric{Unit: unitRate}}
	if got := cellText(0, false, mr, 0, 5); got != "n/a" {
		t.Errorf("no values, no failure: %q, want n/a", got)
	}
	mr.Failed[1] = "boom"
	mr.Values[1] = []float64{1, 2}
	if got := cellText(1.5, true, mr, 1, 5); got != "failed (2/5 rounds passed)" {
		t.Errorf("partial: %q, want %q", got, "failed (2/5 rounds passed)")
	}
}

func TestTableOrderIsStable(t *testing.T) {
	rows := []metricResult{
		{metric: metric{Name: "b", Order: 2}},
		{metric: metric{Name: "a1", Order: 1}},
		{metric: metric{Name: "c", Order: 0}},
		{metric: metric{Name: "a2", Order: 1}},
	}
	var got []string
	for _, r := range tableOrder(rows) {
		got = append(got, r.Name)
	}
	if strings.Join(got, ",") != "c,a1,a2,b" {
		t.Errorf("tableOrder = %v, want c,a1,a2,b", got)
	}
}

func TestWriteReportWithFailuresIsNotPublished(t *testing.T) {
	path := filepath.Join(t.TempDir(), "table.md")
	var stdout strings.Builder
	err := writeReport(&stdout, path, testReport())
	if err == nil || !strings.Contains(err.Error(), "not writing "+path) {
		t.Fatalf("writeReport with failures: err = %v, want a refusal naming %s", err, path)
	}
	if _, statErr := os.Stat(path); !errors.Is(statErr, fs.ErrNotExist) {
		t.Fatalf("%s was written (stat: %v)", path, statErr)
	}
	if !strings.Contains(stdout.String(), "Not for publication") {
		t.Fatalf("stdout lacks the banner:\n%s", stdout.String())
	}
	clean := testReport()
	clean.Errors = nil
	if err := writeReport(io.Discard, path, clean); err != nil {
		t.Fatalf("writeReport without failures: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("clean run not written: %v", err)
	}
}
