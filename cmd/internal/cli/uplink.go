package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leafbox/leafbox/cmd/internal/monhttp"
	"github.com/leafbox/leafbox/core/monitor"
)

// defaultMonitorURL is where `leafbox uplink status` looks for the
// monitoring endpoint: the default http_port on loopback.
const defaultMonitorURL = "http://127.0.0.1:8222"

// monitorTimeout bounds one request to the monitoring endpoint.
const monitorTimeout = 5 * time.Second

func newUplinkCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "uplink",
		Short: "Inspect the store-and-forward uplinks of a running leafbox",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newUplinkStatusCmd())
	cmd.AddCommand(newUplinkDeadLettersCmd(), newUplinkRequeueCmd())
	return cmd
}

func newUplinkStatusCmd() *cobra.Command {
	var monURL string
	var progress bool
	var interval time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print the uplinks' backlog, counters and link state",
		Long: "status asks a running leafbox for " + monitor.UplinkzPath + " on its monitoring endpoint\n" +
			"and prints one line per uplink: forwarder and link state, backlog\n" +
			"(messages, bytes, age of the oldest), the captured, forwarded, acked\n" +
			"and dropped totals, and the last error; then one line per downlink.\n\n" +
			"With --progress it redraws one progress line per uplink every --interval\n" +
			"(share of the backlog acknowledged since it started, what is left, drain\n" +
			"rate, ETA, and why the scheduler holds the uplink) and returns once every\n" +
			"backlog is empty.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if progress {
				return watchProgress(cmd, monURL, interval)
			}
			uz, err := fetchUplinkz(cmd, monURL)
			if err != nil {
				return err
			}
			return printUplinks(cmd.OutOrStdout(), uz)
		},
	}
	cmd.Flags().StringVar(&monURL, "monitor", defaultMonitorURL, "`URL` of the leafbox monitoring endpoint (http_port)")
	cmd.Flags().BoolVar(&progress, "progress", false, "redraw a progress line per uplink until every backlog is drained")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "time between redraws with --progress")
	return cmd
}

// fetchUplinkz GETs /uplinkz from the monitoring endpoint at base.
func fetchUplinkz(cmd *cobra.Command, base string) (*monitor.Uplinkz, error) {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	url := strings.TrimRight(base, "/") + monitor.UplinkzPath
	req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("--monitor %q: %w", base, err)
	}
	resp, err := monhttp.Do(req, monitorTimeout)
	if err != nil {
		return nil, fmt.Errorf("monitoring endpoint %s unreachable (is leafbox running with http_port enabled? point --monitor at it): %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("GET %s: %s (not a leafbox with uplink support?)", url, resp.Status)
		}
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	var uz monitor.Uplinkz
	if err := json.Unmarshal(body, &uz); err != nil {
		return nil, fmt.Errorf("GET %s: decoding the answer: %w", url, err)
	}
	if uz.Uplinks == nil {
		return nil, errors.New("GET " + url + ": the answer lists no uplinks field")
	}
	return &uz, nil
}

// printUplinks writes uz as a table, one uplink per row.
func printUplinks(w io.Writer, uz *monitor.Uplinkz) error {
	if len(uz.Uplinks) == 0 && len(uz.Downlinks) > 0 {
		return printDownlinks(w, uz)
	}
	if len(uz.Uplinks) == 0 {
		_, err := fmt.Fprintln(w, "no uplinks running")
		return err
	}
	if len(uz.Downlinks) > 0 {
		defer func() { fmt.Fprintln(w); _ = printDownlinks(w, uz) }()
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "UPLINK\tSTATE\tLINK\tBACKLOG\tBYTES\tOLDEST\tCAPTURED\tFORWARDED\tACKED\tDROPPED\tDEAD\tLAST ERROR")
	for _, u := range uz.Uplinks {
		oldest := "-"
		if u.OldestAgeSeconds > 0 {
			oldest = (time.Duration(u.OldestAgeSeconds * float64(time.Second))).Round(time.Second).String()
		}
		lastErr := "-"
		if u.LastError != "" {
			lastErr = u.LastError
			if u.LastErrorAt != nil && !uz.Now.IsZero() {
				lastErr += " (" + uz.Now.Sub(*u.LastErrorAt).Round(time.Second).String() + " ago)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%s\t%d\t%s\n",
			u.Name, u.State, u.LinkState, u.BacklogMsgs, formatBytes(u.BacklogBytes), oldest,
			u.Captured, u.Forwarded, u.Acked, formatDropped(u.Dropped), u.DeadLetterMsgs, lastErr)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printRejections(w, uz)
	return printLimits(w, uz.Limits)
}

// formatBytes renders n in binary units: 512B, 1.5KiB, 20.0MiB.
func formatBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatUint(n, 10) + "B"
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f%ciB", float64(n)/float64(div), "KMGTP"[exp])
}

// formatDropped renders the drop counts: "0", or "5 (limits=3 rejected=2)".
func formatDropped(d map[string]uint64) string {
	var total uint64
	reasons := make([]string, 0, len(d))
	for r, n := range d {
		if n > 0 {
			total += n
			reasons = append(reasons, r)
		}
	}
	if total == 0 {
		return "0"
	}
	sort.Strings(reasons)
	parts := make([]string, len(reasons))
	for i, r := range reasons {
		parts[i] = r + "=" + strconv.FormatUint(d[r], 10)
	}
	return strconv.FormatUint(total, 10) + " (" + strings.Join(parts, " ") + ")"
}
