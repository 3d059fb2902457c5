package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// clientStats is one client's row of a `nats bench --csv` file.
//
// natscli v0.5.0 writes a header line that starts with '#'
// ("#RunID,ClientID,MsgCount,..."), then one row per client, and leaves
// the last row without a trailing newline. Publisher and requester files
// carry latency columns (microseconds); subscriber files stop at
// DurationSecs. For `bench service request`, MsgCount and MsgBytes count
// requests and replies together (twice the requests sent), while
// MsgsPerSec counts requests only, so rates are derived from MsgsPerSec,
// never from MsgCount.
type clientStats struct {
	ClientID   string  // ClientID is natscli's label, such as "P0" or "S3".
	MsgCount   int64   // MsgCount is the MsgCount column (see the type comment for requests).
	MsgsPerSec float64 // MsgsPerSec is the client's own rate.
	Duration   float64 // Duration is the client's measured time window, in seconds.

	HasLatency bool    // HasLatency reports whether the latency columns were present.
	P50        float64 // P50 is the median latency in microseconds, when HasLatency.
	P99        float64 // P99 is the 99th-percentile latency in microseconds, when HasLatency.
}

// CSV column names written by natscli v0.5.0.
const (
	colClientID   = "ClientID"
	colMsgCount   = "MsgCount"
	colMsgsPerSec = "MsgsPerSec"
	colDuration   = "DurationSecs"
	colP50        = "P50LatencyMicroSecs"
	colP99        = "P99LatencyMicroSecs"
)

// errNoRows reports a CSV file with a header but no client rows.
var errNoRows = errors.New("benchcmp: csv has no client rows")

// parseBenchCSV reads a natscli bench CSV file. Columns are found by name,
// so added or reordered columns do not break it; the latency columns are
// optional.
func parseBenchCSV(r io.Reader) ([]clientStats, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("benchcmp: csv is empty")
	}
	if err != nil {
		return nil, fmt.Errorf("benchcmp: csv header: %w", err)
	}
	index := make(map[string]int, len(header))
	for i, name := range header {
		index[strings.TrimPrefix(strings.TrimSpace(name), "#")] = i
	}
	for _, name := range []string{colClientID, colMsgCount, colMsgsPerSec, colDuration} {
		if _, ok := index[name]; !ok {
			return nil, fmt.Errorf("benchcmp: csv header lacks column %q (header %q)", name, strings.Join(header, ","))
		}
	}
	_, hasP50 := index[colP50]
	_, hasP99 := index[colP99]
	withLatency := hasP50 && hasP99

	var rows []clientStats
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("benchcmp: csv line %d: %w", line, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		field := func(name string) (string, error) {
			i := index[name]
			if i >= len(rec) {
				return "", fmt.Errorf("benchcmp: csv line %d: missing %s", line, name)
			}
			return strings.TrimSpace(rec[i]), nil
		}
		number := func(name string) (float64, error) {
			s, err := field(name)
			if err != nil {
				return 0, err
			}
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return 0, fmt.Errorf("benchcmp: csv line %d: %s %q is not a number", line, name, s)
			}
			return v, nil
		}
		var cs clientStats
		var count float64
		if cs.ClientID, err = field(colClientID); err != nil {
			return nil, err
		}
		if count, err = number(colMsgCount); err != nil {
			return nil, err
		}
		cs.MsgCount = int64(count)
		if cs.MsgsPerSec, err = number(colMsgsPerSec); err != nil {
			return nil, err
		}
		if cs.Duration, err = number(colDuration); err != nil {
			return nil, err
		}
		if withLatency {
			cs.HasLatency = true
			if cs.P50, err = number(colP50); err != nil {
				return nil, err
			}
			if cs.P99, err = number(colP99); err != nil {
				return nil, err
			}
		}
		rows = append(rows, cs)
	}
	if len(rows) == 0 {
		return nil, errNoRows
	}
	return rows, nil
}

// aggregateRate is the combined rate of all clients over the longest
// client window: the sum of MsgsPerSec×Duration (each client's message
// count as natscli rates it) divided by the largest Duration. With one
// client it is that client's MsgsPerSec. natscli's own "aggregated" line
// divides by the span from the first start to the last end, which the CSV
// does not record; with clients started together the two agree closely.
func aggregateRate(rows []clientStats) (float64, error) {
	if len(rows) == 0 {
		return 0, errNoRows
	}
	if len(rows) == 1 {
		return rows[0].MsgsPerSec, nil
	}
	var msgs, window float64
	for _, r := range rows {
		if r.Duration <= 0 {
			return 0, fmt.Errorf("benchcmp: client %s has duration %g", r.ClientID, r.Duration)
		}
		msgs += r.MsgsPerSec * r.Duration
		window = max(window, r.Duration)
	}
	return msgs / window, nil
}

// worstLatency returns the largest p50 and p99 over the clients, the
// conservative summary when several clients measured latency.
func worstLatency(rows []clientStats) (p50, p99 float64, err error) {
	if len(rows) == 0 {
		return 0, 0, errNoRows
	}
	for _, r := range rows {
		if !r.HasLatency {
			return 0, 0, fmt.Errorf("benchcmp: client %s has no latency columns", r.ClientID)
		}
		p50 = max(p50, r.P50)
		p99 = max(p99, r.P99)
	}
	return p50, p99, nil
}
