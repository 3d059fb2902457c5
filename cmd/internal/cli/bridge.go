package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leafbox/leafbox/cmd/internal/monhttp"
	"github.com/leafbox/leafbox/core/monitor"
)

func newBridgeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bridge",
		Short: "Inspect the bridges (MQTT, serial, Modbus) of a running leafbox",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBridgeStatusCmd())
	return cmd
}

func newBridgeStatusCmd() *cobra.Command {
	var monURL string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print each bridge's state, counters and last error",
		Long: "status asks a running leafbox for " + monitor.BridgezPath + " on its monitoring endpoint\n" +
			"and prints one line per bridge: kind, name, account, state and for how\n" +
			"long, messages in (device to NATS) and out, bad frames, reconnects,\n" +
			"drops by reason, and the last error with its age. --json prints the\n" +
			"document as leafbox served it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			body, bz, err := fetchBridgez(cmd, monURL)
			if err != nil {
				return err
			}
			if asJSON {
				_, err := cmd.OutOrStdout().Write(body)
				return err
			}
			return printBridges(cmd.OutOrStdout(), bz)
		},
	}
	cmd.Flags().StringVar(&monURL, "monitor", defaultMonitorURL, "`URL` of the leafbox monitoring endpoint (http_port)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the "+monitor.BridgezPath+" document instead of a table")
	return cmd
}

// fetchBridgez GETs /bridgez from the monitoring endpoint at base and
// returns the body and its decoding.
func fetchBridgez(cmd *cobra.Command, base string) ([]byte, *monitor.Bridgez, error) {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	url := strings.TrimRight(base, "/") + monitor.BridgezPath
	req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, url, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("--monitor %q: %w", base, err)
	}
	resp, err := monhttp.Do(req, monitorTimeout)
	if err != nil {
		return nil, nil, fmt.Errorf("monitoring endpoint %s unreachable (is leafbox running with http_port enabled? point --monitor at it): %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode == http.StatusNotFound {
			return nil, nil, fmt.Errorf("GET %s: %s (not a leafbox with bridge support?)", url, resp.Status)
		}
		return nil, nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	var bz monitor.Bridgez
	if err := json.Unmarshal(body, &bz); err != nil {
		return nil, nil, fmt.Errorf("GET %s: decoding the answer: %w", url, err)
	}
	if bz.Bridges == nil {
		return nil, nil, errors.New("GET " + url + ": the answer lists no bridges field")
	}
	return body, &bz, nil
}

// printBridges writes bz as a table, one bridge per row.
func printBridges(w io.Writer, bz *monitor.Bridgez) error {
	if len(bz.Bridges) == 0 {
		_, err := fmt.Fprintln(w, "no bridges running")
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "KIND\tNAME\tACCOUNT\tSTATE\tSINCE\tIN\tOUT\tBAD FRAMES\tRECONNECTS\tDROPPED\tLAST ERROR")
	for _, b := range bz.Bridges {
		account := b.Account
		if account == "" {
			account = "-"
		}
		since := "-"
		if !b.Since.IsZero() && !bz.Now.IsZero() {
			since = bz.Now.Sub(b.Since).Round(time.Second).String()
		}
		lastErr := "-"
		if b.LastError != "" {
			lastErr = b.LastError
			if b.LastErrorAt != nil {
				lastErr += " (" + (time.Duration(b.LastErrorAgeSeconds * float64(time.Second))).Round(time.Second).String() + " ago)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n",
			b.Kind, b.Name, account, b.State, since, b.In, b.Out, b.BadFrames, b.Reconnects, formatDropped(b.Drops), lastErr)
	}
	return tw.Flush()
}
