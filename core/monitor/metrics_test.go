package monitor

import (
	"bytes"
	"io"
	"math"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

// sampleLine matches one sample of the text format: a name, optional
// labels with quoted, escaped values, and a float value.
var sampleLine = regexp.MustCompile(
	`^([a-zA-Z_:][a-zA-Z0-9_:]*)` +
		`(\{[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*"(?:,[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*")*\})?` +
		` (\S+)$`)

var commentLine = regexp.MustCompile(`^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$`)

// parseMetrics checks that every line of text is a comment or a sample,
// that every sample belongs to a declared family, and returns the samples
// keyed by name plus label block.
func parseMetrics(t *testing.T, text string) (samples map[string]float64, types map[string]string) {
	t.Helper()
	samples = map[string]float64{}
	types = map[string]string{}
	if !strings.HasSuffix(text, "\n") {
		t.Fatal("exposition does not end in a newline")
	}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if m := commentLine.FindStringSubmatch(line); m != nil {
			if m[1] == "TYPE" {
				if _, dup := types[m[2]]; dup {
					t.Errorf("line %d: family %s declared twice", i+1, m[2])
				}
				types[m[2]] = m[3]
			}
			continue
		}
		m := sampleLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("line %d: not a comment or sample: %q", i+1, line)
			continue
		}
		if _, ok := types[m[1]]; !ok {
			t.Errorf("line %d: sample %s has no TYPE line before it", i+1, m[1])
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Errorf("line %d: value %q: %v", i+1, m[3], err)
		}
		samples[m[1]+m[2]] = v
	}
	return samples, types
}

// extraMetrics adds a MetricsSource to the fixture.
type extraMetrics struct{ *fakeProvider }

func (extraMetrics) WriteMetrics(w io.Writer) {
	m := NewMetricWriter(w)
	m.Gauge("leafbox_outbox_bytes", "Bytes waiting in the leaf outbox.", 42)
}

func TestMetrics(t *testing.T) {
	h := newTestHandler(t, extraMetrics{newFixture()})
	res, body := get(t, h, "/metrics")
	require.Equal(t, res.StatusCode, 200, "status")
	require.Equal(t, res.Header.Get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8", "Content-Type")
	require.Equal(t, res.Header.Get("Access-Control-Allow-Origin"), "*", "CORS")

	samples, types := parseMetrics(t, string(body))
	want := map[string]float64{
		"leafbox_connections":                          4,
		"leafbox_connections_accepted_total":           7,
		"leafbox_leafnodes":                            1,
		"leafbox_subscriptions":                        6,
		"leafbox_in_msgs_total":                        130,
		"leafbox_out_msgs_total":                       75,
		"leafbox_in_bytes_total":                       1500,
		"leafbox_out_bytes_total":                      740,
		"leafbox_slow_consumers_total":                 1,
		"leafbox_stale_connections_total":              2,
		"leafbox_uptime_seconds":                       36000,
		`leafbox_http_requests_total{path="/metrics"}`: 1,
		"leafbox_outbox_bytes":                         42,
	}
	for name, v := range want {
		got, ok := samples[name]
		if !ok {
			t.Errorf("missing series %s", name)
			continue
		}
		if got != v {
			t.Errorf("%s = %v, want %v", name, got, v)
		}
	}
	if samples["leafbox_mem_bytes"] <= 0 {
		t.Errorf("leafbox_mem_bytes = %v", samples["leafbox_mem_bytes"])
	}
	if _, ok := samples[`leafbox_info{server_id="NSERVERID",server_name="edge-1",version="0.1.0",go="`+runtime.Version()+`"}`]; !ok {
		t.Errorf("leafbox_info missing or mislabelled")
	}
	for name, typ := range types {
		wantType := "gauge"
		if strings.HasSuffix(name, "_total") {
			wantType = "counter"
		}
		require.Equal(t, typ, wantType, "type of "+name)
	}

	// A second scrape sees the first counted.
	_, body = get(t, h, "/metrics")
	samples, _ = parseMetrics(t, string(body))
	require.Equal(t, samples[`leafbox_http_requests_total{path="/metrics"}`], 2.0, "requests")
}

func TestMetricWriter(t *testing.T) {
	var buf bytes.Buffer
	m := NewMetricWriter(&buf)
	m.Family("x_total", Counter, "Help with \\ and\nnewline.")
	m.Sample("x_total", 3, "path", `a"b\c`+"\n", "kind", "k")
	m.Sample("x_total", 1.5)
	m.Gauge("y", "Y.", math.Inf(1))
	m.Gauge("z", "Z.", math.NaN())
	m.Gauge("big", "Big.", 1e20)
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	want := "# HELP x_total Help with \\\\ and\\nnewline.\n" +
		"# TYPE x_total counter\n" +
		"x_total{path=\"a\\\"b\\\\c\\n\",kind=\"k\"} 3\n" +
		"x_total 1.5\n" +
		"# HELP y Y.\n# TYPE y gauge\ny +Inf\n" +
		"# HELP z Z.\n# TYPE z gauge\nz NaN\n" +
		"# HELP big Big.\n# TYPE big gauge\nbig 1e+20\n"
	require.Equal(t, buf.String(), want, "exposition")
	parseMetrics(t, buf.String())
}

func TestMetricWriterRejects(t *testing.T) {
	tests := []struct {
		name string
		fn   func(m *MetricWriter)
	}{
		{"bad family name", func(m *MetricWriter) { m.Family("1abc", Gauge, "") }},
		{"bad type", func(m *MetricWriter) { m.Family("abc", "histogram", "") }},
		{"bad sample name", func(m *MetricWriter) { m.Sample("a-b", 1) }},
		{"odd labels", func(m *MetricWriter) { m.Sample("a", 1, "x") }},
		{"bad label name", func(m *MetricWriter) { m.Sample("a", 1, "a:b", "v") }},
		{"reserved label name", func(m *MetricWriter) { m.Sample("a", 1, "__name__", "v") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			m := NewMetricWriter(&buf)
			tc.fn(m)
			if m.Err() == nil {
				t.Fatal("no error")
			}
			m.Gauge("ok", "after an error nothing is written", 1)
			if buf.Len() != 0 {
				t.Fatalf("wrote %q", buf.String())
			}
		})
	}
}
