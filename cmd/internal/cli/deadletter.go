package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leafbox/leafbox/cmd/internal/monhttp"
	"github.com/leafbox/leafbox/core/monitor"
)

func newUplinkDeadLettersCmd() *cobra.Command {
	var monURL string
	var limit int
	cmd := &cobra.Command{
		Use:   "deadletters [UPLINK]",
		Short: "List the messages the hub refused for good, of one uplink or all",
		Long: "deadletters asks a running leafbox for " + monitor.DeadLetterzPath + " on its monitoring\n" +
			"endpoint and prints one line per dead-lettered message: its dead-letter\n" +
			"sequence (what requeue takes), subject, size, the refusal reason\n" +
			"(no_stream, wrong_stream, too_large, permission, hub_error, duplicate_id),\n" +
			"when it was set aside, and the hub's error.\n\n" +
			"An uplink moves a message there after uplinks[].dead_letter_after\n" +
			"permanent refusals (default 3), so that the messages after it go on.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"limit": {strconv.Itoa(limit)}}
			if len(args) == 1 {
				q.Set("uplink", args[0])
			}
			var dz monitor.DeadLetterz
			if err := monitorDo(cmd, monURL, http.MethodGet, monitor.DeadLetterzPath+"?"+q.Encode(), nil, &dz); err != nil {
				return err
			}
			return printDeadLetters(cmd.OutOrStdout(), &dz)
		},
	}
	cmd.Flags().StringVar(&monURL, "monitor", defaultMonitorURL, "`URL` of the leafbox monitoring endpoint (http_port)")
	cmd.Flags().IntVar(&limit, "limit", 1000, "list at most this many messages")
	return cmd
}

func newUplinkRequeueCmd() *cobra.Command {
	var monURL string
	var all bool
	cmd := &cobra.Command{
		Use:   "requeue UPLINK (SEQ... | --all)",
		Short: "Move dead-lettered messages back to the uplink's outbox",
		Long: "requeue moves dead-lettered messages of UPLINK, by the sequences\n" +
			"`leafbox uplink deadletters` lists (or every one with --all), back to the\n" +
			"tail of its outbox; they forward again after the messages already\n" +
			"waiting. Fix the cause first (create the hub stream, raise max_payload,\n" +
			"grant the permission), or the hub refuses them again.\n\n" +
			"A requeued message keeps the Nats-Msg-Id it was first sent with, so that\n" +
			"the hub stream's duplicate window drops it should the hub hold it after\n" +
			"all; one refused as duplicate_id (its id collided with another message's)\n" +
			"gets a new id.\n\n" +
			"requeue POSTs to " + monitor.RequeuePath + " on the monitoring endpoint,\n" +
			"which changes state: the endpoint binds loopback by default (http:\n" +
			"127.0.0.1:8222); keep it so, or behind a firewall, when you expose it.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := monitor.RequeueRequest{Uplink: args[0], All: all}
			for _, a := range args[1:] {
				for _, part := range strings.Split(a, ",") {
					seq, err := strconv.ParseUint(strings.TrimSpace(part), 10, 64)
					if err != nil || seq == 0 {
						return fmt.Errorf("requeue: %q is not a dead-letter sequence", part)
					}
					req.Seqs = append(req.Seqs, seq)
				}
			}
			if all == (len(req.Seqs) > 0) {
				return errors.New("requeue: give the sequences to requeue or --all, not both or neither")
			}
			body, _ := json.Marshal(req)
			var resp monitor.RequeueResponse
			err := monitorDo(cmd, monURL, http.MethodPost, monitor.RequeuePath, body, &resp)
			if err != nil && resp.Error == "" {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "requeued %d message(s) of uplink %s\n", resp.Requeued, req.Uplink)
			if resp.Error != "" {
				return errors.New("requeue: " + resp.Error)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&monURL, "monitor", defaultMonitorURL, "`URL` of the leafbox monitoring endpoint (http_port)")
	cmd.Flags().BoolVar(&all, "all", false, "requeue every dead-lettered message of the uplink")
	return cmd
}

// monitorDo sends a request to path on the monitoring endpoint at base
// (a POST with a JSON body when body is set) and decodes the JSON answer
// into out. A non-2xx answer is an error; its JSON body is still decoded
// when it has one.
func monitorDo(cmd *cobra.Command, base, method, path string, body []byte, out any) error {
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	u := strings.TrimRight(base, "/") + path
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(cmd.Context(), method, u, rd)
	if err != nil {
		return fmt.Errorf("--monitor %q: %w", base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := monhttp.Do(req, monitorTimeout)
	if err != nil {
		return fmt.Errorf("monitoring endpoint %s unreachable (is leafbox running with http_port enabled? point --monitor at it): %w", base, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	isJSON := strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json")
	if isJSON {
		if jerr := json.Unmarshal(data, out); jerr != nil && resp.StatusCode/100 == 2 {
			return fmt.Errorf("%s %s: decoding the answer: %w", method, u, jerr)
		}
	}
	if resp.StatusCode/100 != 2 {
		if resp.StatusCode == http.StatusNotFound && !strings.Contains(string(data), "uplink") {
			return fmt.Errorf("%s %s: %s (not a leafbox with dead-letter support?)", method, u, resp.Status)
		}
		return fmt.Errorf("%s %s: %s: %s", method, u, resp.Status, strings.TrimSpace(string(data)))
	}
	if !isJSON {
		return fmt.Errorf("%s %s: the answer is not JSON", method, u)
	}
	return nil
}

// printDeadLetters writes dz as a table, one message per row.
func printDeadLetters(w io.Writer, dz *monitor.DeadLetterz) error {
	if len(dz.Messages) == 0 {
		_, err := fmt.Fprintln(w, "no dead-lettered messages")
		return err
	}
	tw := newTable(w)
	fmt.Fprintln(tw, "UPLINK\tSEQ\tSUBJECT\tSIZE\tREASON\tTIME\tERROR")
	for _, d := range dz.Messages {
		at := "-"
		if !d.Time.IsZero() {
			at = d.Time.UTC().Format(time.RFC3339)
			if !dz.Now.IsZero() {
				at += " (" + dz.Now.Sub(d.Time).Round(time.Second).String() + " ago)"
			}
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", d.Uplink, d.Seq, d.Subject, formatBytes(uint64(d.Size)), d.Reason, at, d.Error)
	}
	return tw.Flush()
}

// printRejections writes one line per uplink that dead-lettered messages
// or met an unexpected duplicate: the counts and the last rejection with
// its age.
func printRejections(w io.Writer, uz *monitor.Uplinkz) {
	for _, u := range uz.Uplinks {
		if u.DeadLettered == 0 && u.DeadLetterMsgs == 0 && u.HubDuplicatesUnexpected == 0 && u.LastRejection == "" {
			continue
		}
		line := fmt.Sprintf("%s: %d dead-lettered, %d held, %d requeued, %d unexpected duplicate(s)",
			u.Name, u.DeadLettered, u.DeadLetterMsgs, u.Requeued, u.HubDuplicatesUnexpected)
		if u.LastRejection != "" {
			line += "; last rejection"
			if u.LastRejectionAt != nil && !uz.Now.IsZero() {
				line += " " + uz.Now.Sub(*u.LastRejectionAt).Round(time.Second).String() + " ago"
			}
			line += ": " + u.LastRejection
		}
		if u.DeadLetterMsgs > 0 {
			line += " (see `leafbox uplink deadletters " + u.Name + "`)"
		}
		fmt.Fprintln(w, line)
	}
}
