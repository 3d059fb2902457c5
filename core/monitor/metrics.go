package monitor

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// metricsContentType is the Prometheus text exposition format, version 0.0.4.
const metricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// The metric types of the text format.
const (
	// Counter is a value that only goes up (it resets on restart).
	Counter = "counter"
	// Gauge is a value that goes up and down.
	Gauge = "gauge"
)

// MetricWriter writes metric families in the Prometheus text exposition
// format. It records the first write error or invalid name and then ignores
// further calls; check Err when done. It is not safe for concurrent use.
type MetricWriter struct {
	w   io.Writer
	buf []byte
	err error
}

// NewMetricWriter returns a MetricWriter writing to w.
func NewMetricWriter(w io.Writer) *MetricWriter {
	return &MetricWriter{w: w}
}

// Err returns the first error met, if any.
func (m *MetricWriter) Err() error { return m.err }

// Family writes the HELP and TYPE lines that precede a family's samples.
// typ is Counter or Gauge; a counter's name should end in "_total".
func (m *MetricWriter) Family(name, typ, help string) {
	if m.err != nil {
		return
	}
	if !validMetricName(name) {
		m.err = fmt.Errorf("monitor: invalid metric name %q", name)
		return
	}
	if typ != Counter && typ != Gauge {
		m.err = fmt.Errorf("monitor: invalid metric type %q", typ)
		return
	}
	b := m.buf[:0]
	b = append(b, "# HELP "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = appendEscaped(b, help, false)
	b = append(b, "\n# TYPE "...)
	b = append(b, name...)
	b = append(b, ' ')
	b = append(b, typ...)
	b = append(b, '\n')
	m.write(b)
}

// Sample writes one sample of the family last introduced by Family.
// labels alternate names and values: Sample("x_total", 3, "path", "/varz").
func (m *MetricWriter) Sample(name string, value float64, labels ...string) {
	if m.err != nil {
		return
	}
	if !validMetricName(name) {
		m.err = fmt.Errorf("monitor: invalid metric name %q", name)
		return
	}
	if len(labels)%2 != 0 {
		m.err = errors.New("monitor: labels must be name/value pairs")
		return
	}
	b := append(m.buf[:0], name...)
	if len(labels) > 0 {
		b = append(b, '{')
		for i := 0; i < len(labels); i += 2 {
			if !validLabelName(labels[i]) {
				m.err = fmt.Errorf("monitor: invalid label name %q", labels[i])
				return
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, labels[i]...)
			b = append(b, `="`...)
			b = appendEscaped(b, labels[i+1], true)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendValue(b, value)
	b = append(b, '\n')
	m.write(b)
}

// Counter writes a counter family with one unlabelled sample.
func (m *MetricWriter) Counter(name, help string, value float64) {
	m.Family(name, Counter, help)
	m.Sample(name, value)
}

// Gauge writes a gauge family with one unlabelled sample.
func (m *MetricWriter) Gauge(name, help string, value float64) {
	m.Family(name, Gauge, help)
	m.Sample(name, value)
}

func (m *MetricWriter) write(b []byte) {
	m.buf = b
	if _, err := m.w.Write(b); err != nil {
		m.err = err
	}
}

// appendValue formats v as the text format expects: integers without an
// exponent where exact, NaN and ±Inf spelled out.
func appendValue(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, 1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case v == math.Trunc(v) && math.Abs(v) < 1<<53:
		return strconv.AppendInt(b, int64(v), 10)
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

// appendEscaped escapes backslash and newline, and in label values also the
// double quote.
func appendEscaped(b []byte, s string, quote bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// validMetricName reports whether s matches [a-zA-Z_:][a-zA-Z0-9_:]*.
func validMetricName(s string) bool {
	return validName(s, true)
}

// validLabelName reports whether s matches [a-zA-Z_][a-zA-Z0-9_]* and does
// not start with the reserved "__".
func validLabelName(s string) bool {
	return validName(s, false) && !strings.HasPrefix(s, "__")
}

func validName(s string, colon bool) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' ||
			c == ':' && colon || c >= '0' && c <= '9' && i > 0
		if !ok {
			return false
		}
	}
	return true
}

// writeVarzMetrics writes the leafbox_ metrics derived from v.
func writeVarzMetrics(m *MetricWriter, v *Varz, now time.Time) {
	m.Family("leafbox_info", Gauge, "Server identity; the value is always 1.")
	m.Sample("leafbox_info", 1, "server_id", v.ID, "server_name", v.Name, "version", v.Version, "go", v.GoVersion)

	m.Gauge("leafbox_connections", "Open client connections.", float64(v.Connections))
	m.Counter("leafbox_connections_accepted_total", "Client connections accepted since start.", float64(v.TotalConnections))
	m.Gauge("leafbox_leafnodes", "Open leafnode connections.", float64(v.Leafs))
	m.Gauge("leafbox_subscriptions", "Subscriptions over all accounts.", float64(v.Subscriptions))

	m.Counter("leafbox_in_msgs_total", "Messages received from all connections.", float64(v.InMsgs))
	m.Counter("leafbox_out_msgs_total", "Messages sent to all connections.", float64(v.OutMsgs))
	m.Counter("leafbox_in_bytes_total", "Payload bytes received from all connections.", float64(v.InBytes))
	m.Counter("leafbox_out_bytes_total", "Payload bytes sent to all connections.", float64(v.OutBytes))
	m.Counter("leafbox_slow_consumers_total", "Connections closed as slow consumers.", float64(v.SlowConsumers))
	m.Counter("leafbox_stale_connections_total", "Connections closed as stale.", float64(v.StaleConnections))

	var uptime float64
	if !v.Start.IsZero() {
		uptime = now.Sub(v.Start).Seconds()
		m.Gauge("leafbox_start_time_seconds", "Server start time in seconds since the Unix epoch.",
			float64(v.Start.UnixNano())/1e9)
	}
	m.Gauge("leafbox_uptime_seconds", "Seconds since the server started.", uptime)
	m.Gauge("leafbox_mem_bytes", "Resident memory of the process in bytes.", float64(v.Mem))
	m.Gauge("leafbox_cpu_percent", "Recent CPU use in percent of one core.", v.CPU)
	if sh := v.Shed; sh != nil {
		pressure := 0.0
		if sh.Pressure {
			pressure = 1
		}
		m.Gauge("leafbox_memory_pressure", "1 while new work is refused under memory pressure.", pressure)
		m.Counter("leafbox_shed_connections_total", "Client connections refused under memory pressure.", float64(sh.RefusedConnections))
		m.Counter("leafbox_shed_publishes_total", "JetStream publishes refused under memory pressure.", float64(sh.RefusedPublishes))
	}

	m.Family("leafbox_http_requests_total", Counter, "Monitoring requests per path.")
	paths := make([]string, 0, len(v.HTTPReqStats))
	for p := range v.HTTPReqStats {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		m.Sample("leafbox_http_requests_total", float64(v.HTTPReqStats[p]), "path", p)
	}
}
