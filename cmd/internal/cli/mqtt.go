package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/leafbox/leafbox/cmd/internal/monhttp"
	"github.com/leafbox/leafbox/core/monitor"
)

func newMQTTCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mqtt",
		Short: "Inspect the MQTT listener of a running leafbox",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newMQTTStatusCmd())
	return cmd
}

// mqttStatus is what `leafbox mqtt status --json` prints.
type mqttStatus struct {
	Listen  string             `json:"listen"`  // Listen is the listener's host:port; empty when there is none.
	Clients []monitor.ConnInfo `json:"clients"` // Clients are the connected MQTT clients, as /connz lists them.
}

func newMQTTStatusCmd() *cobra.Command {
	var monURL string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print the MQTT listener's address and its connected clients",
		Long: "status asks a running leafbox for " + monitor.VarzPath + " (the mqtt block) and " + monitor.ConnzPath + "\n" +
			"(its connections of type mqtt) on its monitoring endpoint and prints the\n" +
			"listener's address and one line per connected MQTT client: client id,\n" +
			"protocol version, user, account, address, subscriptions, messages in and\n" +
			"out, bytes waiting to be written, uptime and idle time. --json prints\n" +
			"the listener and the clients' /connz entries.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := fetchMQTTStatus(cmd, monURL)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			return printMQTTStatus(cmd.OutOrStdout(), st)
		},
	}
	cmd.Flags().StringVar(&monURL, "monitor", defaultMonitorURL, "`URL` of the leafbox monitoring endpoint (http_port)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the listener and its clients' "+monitor.ConnzPath+" entries as JSON")
	return cmd
}

// fetchMQTTStatus reads the listener from /varz and its clients from
// /connz, page by page.
func fetchMQTTStatus(cmd *cobra.Command, base string) (*mqttStatus, error) {
	var v struct {
		MQTT *monitor.MQTTVarz `json:"mqtt"`
	}
	if err := getMonitorJSON(cmd, base, monitor.VarzPath, &v); err != nil {
		return nil, err
	}
	st := &mqttStatus{Clients: []monitor.ConnInfo{}}
	if v.MQTT == nil || v.MQTT.Port == 0 {
		return st, nil
	}
	st.Listen = net.JoinHostPort(v.MQTT.Host, strconv.Itoa(v.MQTT.Port))
	for offset := 0; ; {
		var cz monitor.Connz
		path := fmt.Sprintf("%s?auth=true&offset=%d&limit=%d", monitor.ConnzPath, offset, monitor.DefaultConnListSize)
		if err := getMonitorJSON(cmd, base, path, &cz); err != nil {
			return nil, err
		}
		for _, c := range cz.Conns {
			if c.Type == "mqtt" {
				st.Clients = append(st.Clients, c)
			}
		}
		offset += len(cz.Conns)
		if len(cz.Conns) == 0 || offset >= cz.Total {
			return st, nil
		}
	}
}

// getMonitorJSON GETs path from the monitoring endpoint at base and
// decodes the answer into v.
func getMonitorJSON(cmd *cobra.Command, base, path string, v any) error {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	url := strings.TrimRight(base, "/") + path
	req, err := http.NewRequestWithContext(cmd.Context(), http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("--monitor %q: %w", base, err)
	}
	resp, err := monhttp.Do(req, monitorTimeout)
	if err != nil {
		return fmt.Errorf("monitoring endpoint %s unreachable (is leafbox running with http_port enabled? point --monitor at it): %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: decoding the answer: %w", url, err)
	}
	return nil
}

// printMQTTStatus writes the listener line and a table of its clients.
func printMQTTStatus(w io.Writer, st *mqttStatus) error {
	if st.Listen == "" {
		_, err := fmt.Fprintln(w, "no MQTT listener")
		return err
	}
	n := len(st.Clients)
	fmt.Fprintf(w, "MQTT listener %s: %s\n", st.Listen, plural(n, "client"))
	if n == 0 {
		return nil
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "CLIENT ID\tVERSION\tUSER\tACCOUNT\tADDRESS\tSUBS\tIN\tOUT\tPENDING\tUPTIME\tIDLE")
	for _, c := range st.Clients {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%s\t%s\n",
			orDash(c.Name), orDash(c.Version), orDash(c.AuthorizedUser), orDash(c.Account),
			net.JoinHostPort(c.IP, strconv.Itoa(c.Port)), c.NumSubs, c.InMsgs, c.OutMsgs, c.Pending, orDash(c.Uptime), orDash(c.Idle))
	}
	return tw.Flush()
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
