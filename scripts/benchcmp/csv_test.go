package main

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// Files as natscli v0.5.0 writes them: '#' before the header, no newline
// after the last row.
const (
	pubCSV = "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs,MinLatencyMicroSecs,AvgLatencyMicroSecs,MaxLatencyMicroSecs,P50LatencyMicroSecs,P90LatencyMicroSecs,P99LatencyMicroSecs,P99.9LatencyMicroSecs,StdDevLatencyMicroSecs\n" +
		"aWf3pR0vTdIxkkmpACpCJ4,P0,1000000,16000000,2265595,36249534.774037,0.441385,0.060000,0.292419,4530.996000,0.140000,0.170000,0.291000,38.341000,9.266753"

	subCSV = "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs\n" +
		"00kc5Bs4cS1a42ODxg40sl,S0,100000,1600000,140537,2248595.941560,0.711555\n" +
		"00kc5Bs4cS1a42ODxg40sl,S1,100000,1600000,132905,2126488.006826,0.752414\n" +
		"00kc5Bs4cS1a42ODxg40sl,S2,100000,1600000,132877,2126042.987359,0.752572\n" +
		"00kc5Bs4cS1a42ODxg40sl,S3,100000,1600000,132912,2126598.557324,0.752375"

	// For service requests MsgCount counts requests and replies: 20,000
	// requests appear as 40,000 while MsgsPerSec counts requests.
	requestCSV = "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs,MinLatencyMicroSecs,AvgLatencyMicroSecs,MaxLatencyMicroSecs,P50LatencyMicroSecs,P90LatencyMicroSecs,P99LatencyMicroSecs,P99.9LatencyMicroSecs,StdDevLatencyMicroSecs\n" +
		"6Ow6JAphd0zjJbieseyYYe,P0,40000,2560000,3902,499498.353511,5.125142,81.613000,255.749549,7384.137000,246.021000,339.036000,440.927000,1864.346000,287.500947\n"
)

func TestParseBenchCSV(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []clientStats
	}{
		{
			name: "publisher with latency, no final newline",
			in:   pubCSV,
			want: []clientStats{{ClientID: "P0", MsgCount: 1000000, MsgsPerSec: 2265595, Duration: 0.441385,
				HasLatency: true, P50: 0.14, P99: 0.291}},
		},
		{
			name: "four subscribers without latency",
			in:   subCSV,
			want: []clientStats{
				{ClientID: "S0", MsgCount: 100000, MsgsPerSec: 140537, Duration: 0.711555},
				{ClientID: "S1", MsgCount: 100000, MsgsPerSec: 132905, Duration: 0.752414},
				{ClientID: "S2", MsgCount: 100000, MsgsPerSec: 132877, Duration: 0.752572},
				{ClientID: "S3", MsgCount: 100000, MsgsPerSec: 132912, Duration: 0.752375},
			},
		},
		{
			name: "columns found by name, in any order, header without #",
			in:   "DurationSecs,MsgsPerSec,Extra,ClientID,MsgCount\n2.5,400,x,S0,1000\n\n",
			want: []clientStats{{ClientID: "S0", MsgCount: 1000, MsgsPerSec: 400, Duration: 2.5}},
		},
		{
			name: "CRLF line ends",
			in:   "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs\r\nr,S0,10,160,20,320,0.5\r\n",
			want: []clientStats{{ClientID: "S0", MsgCount: 10, MsgsPerSec: 20, Duration: 0.5}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseBenchCSV(strings.NewReader(tc.in))
			if err != nil {
				t.Fatalf("parseBenchCSV: %v", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d rows %+v, want %d", len(got), got, len(tc.want))
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("row %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestParseBenchCSVErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr string
	}{
		{"empty", "", "csv is empty"},
		{"header only", "#RunID,ClientID,MsgCount,MsgBytes,MsgsPerSec,BytesPerSec,DurationSecs\n", "no client rows"},
		{"missing column", "#RunID,ClientID,MsgCount,MsgBytes,BytesPerSec,DurationSecs\nr,P0,1,1,1,1\n", `lacks column "MsgsPerSec"`},
		{"not a number", "#ClientID,MsgCount,MsgsPerSec,DurationSecs\nP0,1,fast,1\n", `MsgsPerSec "fast" is not a number`},
		{"short row", "#ClientID,MsgCount,MsgsPerSec,DurationSecs\nP0,1\n", "line 2: missing MsgsPerSec"},
		{"text instead of csv", "nats: error: unknown flag --csv\n", "lacks column"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseBenchCSV(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
	if _, err := parseBenchCSV(strings.NewReader("ClientID,MsgCount,MsgsPerSec,DurationSecs\n")); !errors.Is(err, errNoRows) {
		t.Errorf("header only: err = %v, want errNoRows", err)
	}
}

func TestAggregateRate(t *testing.T) {
	parse := func(s string) []clientStats {
		t.Helper()
		rows, err := parseBenchCSV(strings.NewReader(s))
		if err != nil {
			t.Fatal(err)
		}
		return rows
	}
	tests := []struct {
		name string
		rows []clientStats
		want float64
		tol  float64
	}{
		// One client: exactly its own rate.
		{"publisher", parse(pubCSV), 2265595, 0},
		// Requests: MsgsPerSec, not the doubled MsgCount / DurationSecs.
		{"requester", parse(requestCSV), 3902, 0},
		// About 400,000 messages (natscli rounds MsgsPerSec to a whole number)
		// over the longest window, 0.752572 s. natscli's own aggregate for this
		// run was 531,251 msgs/s.
		{"four subscribers", parse(subCSV), 400000 / 0.752572, 5},
		{"two equal clients", []clientStats{{ClientID: "a", MsgsPerSec: 100, Duration: 2}, {ClientID: "b", MsgsPerSec: 100, Duration: 2}}, 200, 0},
		{"a slow client stretches the window", []clientStats{{ClientID: "a", MsgsPerSec: 100, Duration: 1}, {ClientID: "b", MsgsPerSec: 50, Duration: 2}}, 100, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := aggregateRate(tc.rows)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(got-tc.want) > tc.tol {
				t.Errorf("aggregateRate = %f, want %f ± %g", got, tc.want, tc.tol)
			}
		})
	}
	if _, err := aggregateRate(nil); !errors.Is(err, errNoRows) {
		t.Errorf("no rows: err = %v, want errNoRows", err)
	}
	if _, err := aggregateRate([]clientStats{{ClientID: "a", Duration: 1}, {ClientID: "b", Duration: 0}}); err == nil {
		t.Error("zero duration: no error")
	}
}

func TestWorstLatency(t *testing.T) {
	rows, err := parseBenchCSV(strings.NewReader(requestCSV))
	if err != nil {
		t.Fatal(err)
	}
	p50, p99, err := worstLatency(rows)
	if err != nil || p50 != 246.021 || p99 != 440.927 {
		t.Errorf("worstLatency = %g, %g, %v; want 246.021, 440.927, nil", p50, p99, err)
	}
	two := []clientStats{{ClientID: "a", HasLatency: true, P50: 10, P99: 90}, {ClientID: "b", HasLatency: true, P50: 20, P99: 40}}
	if p50, p99, _ := worstLatency(two); p50 != 20 || p99 != 90 {
		t.Errorf("two clients: worstLatency = %g, %g; want 20, 90", p50, p99)
	}
	subs, _ := parseBenchCSV(strings.NewReader(subCSV))
	if _, _, err := worstLatency(subs); err == nil {
		t.Error("subscriber rows have no latency, but no error")
	}
}
