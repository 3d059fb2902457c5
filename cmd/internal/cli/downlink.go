package cli

import (
	"fmt"
	"io"
	"time"

	"github.com/leafbox/leafbox/core/monitor"
)

// printDownlinks writes the downlinks of uz as a table, one per row.
func printDownlinks(w io.Writer, uz *monitor.Uplinkz) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "DOWNLINK\tSTATE\tLINK\tSTREAM\tDURABLE\tDELIVERED\tACKED\tREDELIVERED\tFAILED\tPENDING\tLAST ERROR")
	for _, d := range uz.Downlinks {
		lastErr := "-"
		if d.LastError != "" {
			lastErr = d.LastError
			if d.LastErrorAt != nil && !uz.Now.IsZero() {
				lastErr += " (" + uz.Now.Sub(*d.LastErrorAt).Round(time.Second).String() + " ago)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", d.Name, d.State, d.LinkState, d.Stream, d.Durable,
			d.Delivered, d.Acked, d.Redelivered, d.Failed, d.Pending, lastErr)
	}
	return tw.Flush()
}
