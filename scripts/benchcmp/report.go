package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// unit says how a metric's values are measured and formatted.
type unit int

const (
	unitRate     unit = iota // messages per second
	unitRequests             // requests per second (each answered before the next)
	unitMicros               // microseconds
	unitMiB                  // mebibytes
	unitMillis               // milliseconds
	unitBytes                // bytes
	unitPercent              // percent
	unitConns                // connections per second
	unitKiB                  // kibibytes
)

// String returns the unit as it appears in a row name.
func (u unit) String() string {
	switch u {
	case unitRate:
		return "msgs/s"
	case unitRequests:
		return "req/s"
	case unitMicros:
		return "µs"
	case unitMiB:
		return "MiB"
	case unitMillis:
		return "ms"
	case unitBytes:
		return "B"
	case unitPercent:
		return "%"
	case unitConns:
		return "conns/s"
	case unitKiB:
		return "KiB"
	}
	return "?"
}

// direction says which way a metric improves.
type direction int

const (
	higherIsBetter direction = iota
	lowerIsBetter
)

// String returns the word printed in the table's "Better" column.
func (d direction) String() string {
	if d == lowerIsBetter {
		return "lower"
	}
	return "higher"
}

// Sides of a comparison: index 0 is the server under test (leafbox), index
// 1 the reference (nats-server). Every [2] array in this program uses it.
const (
	sideSubject   = 0
	sideReference = 1
)

// metric names one row of the table.
type metric struct {
	Name   string    // Name describes the workload, e.g. "publish-only 16 B".
	Unit   unit      // Unit is how Values are measured.
	Better direction // Better says which direction is an improvement.
	Order  int       // Order places the row in the table: rows sort by it, ties keep their order.
}

// metricResult holds one row's measurements for both sides.
type metricResult struct {
	metric
	Values [2][]float64 // Values holds one value per successful round, per side.
	Failed [2]string    // Failed holds a side's first error, or "".
}

// machineInfo describes the host the benchmark ran on.
type machineInfo struct {
	CPUs     int    // CPUs is the number of usable CPUs (what nproc prints).
	CPUModel string // CPUModel comes from /proc/cpuinfo.
	Platform string // Platform is GOOS/GOARCH.
	Kernel   string // Kernel is the kernel release, or "".
	Go       string // Go is the toolchain that built the harness and leafbox.

	// LoadStart and LoadEnd are the 1-minute load averages before the
	// first and after the last measurement; -1 when unknown.
	LoadStart, LoadEnd float64
}

// busy reports whether other work competed for the CPUs during the run:
// a load average above half the CPUs at either end.
func (m machineInfo) busy() bool {
	limit := float64(m.CPUs) / 2
	return m.LoadStart > limit || m.LoadEnd > limit
}

// report is everything the markdown output shows.
type report struct {
	Labels   [2]string      // Labels name the two sides, e.g. "leafbox" and "nats-server".
	Versions [2]string      // Versions are the servers' version strings.
	Tool     string         // Tool is the load generator's version, e.g. "natscli v0.5.0".
	Machine  machineInfo    // Machine is the host.
	Date     time.Time      // Date is when the run started.
	Rounds   int            // Rounds is how many rounds were planned.
	Workload []string       // Workload lists message counts and sizes, one line each.
	Metrics  []metricResult // Metrics are the table rows, in order.
	Notes    []string       // Notes explain rows, one paragraph each, under the table.
	Errors   []string       // Errors are failures worth printing under the table.
}

// tableOrder sorts rows by Order, keeping the order of rows with equal
// Order, and returns rows.
func tableOrder(rows []metricResult) []metricResult {
	slices.SortStableFunc(rows, func(a, b metricResult) int { return cmp.Compare(a.Order, b.Order) })
	return rows
}

// renderMarkdown writes r as a markdown section: a header list, the table
// of medians and ratios, and notes.
func renderMarkdown(w io.Writer, r report) error {
	var b strings.Builder
	subject, reference := r.Labels[sideSubject], r.Labels[sideReference]
	fmt.Fprintf(&b, "### %s vs %s\n\n", subject, reference)
	if len(r.Errors) > 0 {
		fmt.Fprintf(&b, "**Not for publication: %d harness failures (listed under Failures); rows with a failed round show no figure.**\n\n",
			len(r.Errors))
	}
	fmt.Fprintf(&b, "- Date: %s\n", r.Date.UTC().Format("2006-01-02 15:04 MST"))
	m := r.Machine
	machine := fmt.Sprintf("%d CPUs, %s, %s", m.CPUs, m.CPUModel, m.Platform)
	if m.Kernel != "" {
		machine += ", kernel " + m.Kernel
	}
	fmt.Fprintf(&b, "- Machine: %s\n", machine)
	fmt.Fprintf(&b, "- Go: %s\n", m.Go)
	if m.LoadStart >= 0 && m.LoadEnd >= 0 {
		fmt.Fprintf(&b, "- Load average (1 min): %.2f at start, %.2f at end", m.LoadStart, m.LoadEnd)
		if m.busy() {
			b.WriteString("; other processes competed for the CPUs, so expect noise")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "- Servers: %s %s; %s %s; load from %s, all on loopback\n",
		subject, r.Versions[sideSubject], reference, r.Versions[sideReference], r.Tool)
	fmt.Fprintf(&b, "- Rounds: %d; each cell is the median over rounds; the servers take turns on every row and swap who goes first each round\n", r.Rounds)
	for _, line := range r.Workload {
		fmt.Fprintf(&b, "- %s\n", line)
	}
	b.WriteString("\n")

	fmt.Fprintf(&b, "| Row | %s | %s | %s/%s | Better |\n", subject, reference, subject, reference)
	b.WriteString("|---|--:|--:|--:|---|\n")
	for _, mr := range r.Metrics {
		var cells [2]string
		var medians [2]float64
		var ok [2]bool
		for side := range 2 {
			medians[side], ok[side] = median(mr.Values[side])
			if mr.Failed[side] != "" {
				// A median over the rounds that happened to pass would
				// read as a figure; a failed round voids the cell.
				ok[side] = false
			}
			cells[side] = cellText(medians[side], ok[side], mr, side, r.Rounds)
		}
		fmt.Fprintf(&b, "| %s, %s | %s | %s | %s | %s |\n", mr.Name, mr.Unit, cells[0], cells[1],
			formatRatio(medians[0], medians[1], ok[0], ok[1]), mr.Better)
	}
	fmt.Fprintf(&b, "\nRatio is %s ÷ %s: at or above 1.00× is a win where Better says higher, at or below 1.00× where it says lower.\n",
		subject, reference)
	for _, note := range r.Notes {
		fmt.Fprintf(&b, "\n%s\n", note)
	}
	if len(r.Errors) > 0 {
		b.WriteString("\nFailures:\n\n")
		for _, e := range r.Errors {
			fmt.Fprintf(&b, "- %s\n", e)
		}
	}
	writeRounds(&b, r)
	_, err := io.WriteString(w, b.String())
	return err
}

// cellText formats one side's median; a side with a failed round shows
// "failed" and how many rounds passed, never a figure.
func cellText(v float64, ok bool, mr metricResult, side, rounds int) string {
	if mr.Failed[side] != "" {
		if n := len(mr.Values[side]); n > 0 {
			return fmt.Sprintf("failed (%d/%d rounds passed)", n, rounds)
		}
		return "failed"
	}
	if !ok {
		return "n/a"
	}
	return formatValue(v, mr.Unit)
}

// writeRounds writes every round's values in a collapsed section, so a
// miss can be told apart from noise.
func writeRounds(b *strings.Builder, r report) {
	b.WriteString("\n<details><summary>Values per round</summary>\n\n")
	fmt.Fprintf(b, "| Row | %s | %s |\n|---|---|---|\n", r.Labels[sideSubject], r.Labels[sideReference])
	for _, mr := range r.Metrics {
		var cells [2]string
		for side := range 2 {
			vals := make([]string, len(mr.Values[side]))
			for i, v := range mr.Values[side] {
				vals[i] = formatValue(v, mr.Unit)
			}
			cells[side] = strings.Join(vals, " · ")
			if mr.Failed[side] != "" {
				cells[side] = strings.TrimPrefix(cells[side]+" · failed", " · ")
			}
		}
		fmt.Fprintf(b, "| %s, %s | %s | %s |\n", mr.Name, mr.Unit, cells[0], cells[1])
	}
	b.WriteString("\n</details>\n")
}
