package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leafbox/leafbox/core/monitor"
)

// progressBarWidth is the number of cells in a progress bar.
const progressBarWidth = 20

// watchProgress polls /uplinkz every interval and redraws one progress
// line per uplink until every backlog is empty or the command's context
// ends. On a terminal the lines are redrawn in place; otherwise each poll
// appends them.
func watchProgress(cmd *cobra.Command, base string, interval time.Duration) error {
	if interval <= 0 {
		return errors.New("--interval must be positive")
	}
	out := cmd.OutOrStdout()
	tty := isTerminal(out)
	start := map[string]uint64{} // acked count when the uplink was first seen
	drawn := 0
	for {
		uz, err := fetchUplinkz(cmd, base)
		if err != nil {
			return err
		}
		if len(uz.Uplinks) == 0 {
			_, err := fmt.Fprintln(out, "no uplinks running")
			return err
		}
		var b strings.Builder
		if tty && drawn > 0 {
			fmt.Fprintf(&b, "\x1b[%dA", drawn) // back to the first line drawn
		}
		width := 0
		for _, u := range uz.Uplinks {
			width = max(width, len(u.Name))
		}
		drained := true
		for _, u := range uz.Uplinks {
			if _, ok := start[u.Name]; !ok {
				start[u.Name] = u.Acked
			}
			if u.BacklogMsgs > 0 {
				drained = false
			}
			if tty {
				b.WriteString("\x1b[2K")
			}
			b.WriteString(progressLine(u, start[u.Name], width))
			b.WriteByte('\n')
		}
		drawn = len(uz.Uplinks)
		if uz.Limits != nil {
			if tty {
				b.WriteString("\x1b[2K")
			}
			b.WriteString(limitsLine(uz.Limits))
			b.WriteByte('\n')
			drawn++
		}
		if _, err := io.WriteString(out, b.String()); err != nil {
			return err
		}
		if drained {
			return nil
		}
		t := time.NewTimer(interval)
		select {
		case <-cmd.Context().Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// progressLine renders one uplink: name, state, a bar of the backlog
// acknowledged since ackedAtStart, what is left, the drain rate, the ETA
// and why the scheduler holds it.
func progressLine(u monitor.UplinkInfo, ackedAtStart uint64, nameWidth int) string {
	done := u.Acked - min(ackedAtStart, u.Acked)
	total := done + u.BacklogMsgs
	frac := 1.0
	if total > 0 {
		frac = float64(done) / float64(total)
	}
	cells := int(frac * progressBarWidth)
	bar := strings.Repeat("#", cells) + strings.Repeat("-", progressBarWidth-cells)
	eta := "-"
	if u.ETASeconds > 0 {
		eta = (time.Duration(u.ETASeconds * float64(time.Second))).Round(time.Second).String()
	}
	line := fmt.Sprintf("%-*s  %-11s [%s] %3.0f%%  %d left (%s)  %.0f msg/s %s/s  ETA %s",
		nameWidth, u.Name, u.State, bar, frac*100, u.BacklogMsgs, formatBytes(u.BacklogBytes),
		u.RateMsgs, formatBytes(uint64(u.RateBytes)), eta)
	if u.Waiting != "" {
		line += "  held: " + u.Waiting
	}
	if u.LinkState != "connected" {
		line += "  link " + u.LinkState
	}
	return line
}

// isTerminal reports whether w is a character device, where cursor
// movement redraws lines in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// printLimits writes the caps shared by all uplinks and today's usage, if
// any.
func printLimits(w io.Writer, l *monitor.UplinkLimits) error {
	if l == nil {
		return nil
	}
	_, err := fmt.Fprintln(w, limitsLine(l))
	return err
}

// limitsLine renders the shared caps: "all uplinks: 1.2MiB sent on
// 2026-01-02 of a 500.0MiB daily budget, max rate 2.0MiB/s".
func limitsLine(l *monitor.UplinkLimits) string {
	line := "all uplinks: " + formatBytes(uint64(max(l.BudgetUsed, 0))) + " sent on " + l.Day + " (UTC)"
	if l.DailyBudget > 0 {
		line += " of a " + formatBytes(uint64(l.DailyBudget)) + " daily budget"
		if l.Exhausted {
			line += ", EXHAUSTED: only the highest priority forwards"
		}
	}
	if l.MaxRate > 0 {
		line += ", max rate " + formatBytes(uint64(l.MaxRate)) + "/s"
	}
	return line
}
