//go:build unix

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// The Prometheus rules of deploy/prometheus load in promtool, pass their
// unit tests, and use only metrics a running leafbox exports, with the
// labels it gives them.

// rulesDir is deploy/prometheus, seen from this package.
var rulesDir = filepath.Join(deployDir, "prometheus")

// promtool returns the path of Debian's promtool (package prometheus,
// which scripts/test installs) or fails t.
func promtool(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool not on PATH: install Debian's prometheus package (scripts/test does)")
	}
	return bin
}

// exportedMetric is a metric family of /metrics: its type and the label
// names its samples carry.
type exportedMetric struct {
	typ    string
	labels map[string]bool
}

var (
	typeLineRE   = regexp.MustCompile(`^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$`)
	sampleLineRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? \S+$`)
	labelPairRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"`)
)

// parseMetrics reads the families of a Prometheus text exposition.
func parseMetrics(t *testing.T, body string) map[string]*exportedMetric {
	t.Helper()
	families := map[string]*exportedMetric{}
	for _, line := range strings.Split(body, "\n") {
		if m := typeLineRE.FindStringSubmatch(line); m != nil {
			families[m[1]] = &exportedMetric{typ: m[2], labels: map[string]bool{}}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		m := sampleLineRE.FindStringSubmatch(line)
		if m == nil || families[m[1]] == nil {
			t.Fatalf("/metrics: sample without a family or malformed: %q", line)
		}
		for _, l := range labelPairRE.FindAllStringSubmatch(m[2], -1) {
			families[m[1]].labels[l[1]] = true
		}
	}
	return families
}

// promqlRef is a metric a rule expression names, with the label names of
// its selector and whether a range function (rate, increase, changes)
// reads it.
type promqlRef struct {
	name    string
	labels  []string
	inRange bool
}

var (
	selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?\s*(\[[^\]]*\])?`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	groupingRE = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	quotedRE   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
)

// promqlKeywords are the words of PromQL that are not metric names.
var promqlKeywords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true,
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// metricRefs returns the metrics expr selects. It knows the PromQL the
// rules file uses: selectors with label matchers and ranges, function
// calls, grouping clauses, binary operators and numbers.
func metricRefs(expr string) []promqlRef {
	expr = groupingRE.ReplaceAllString(expr, " ")
	var refs []promqlRef
	for _, m := range selectorRE.FindAllStringSubmatchIndex(expr, -1) {
		name := expr[m[2]:m[3]]
		rest := strings.TrimLeft(expr[m[1]:], " ")
		if promqlKeywords[name] || (m[4] < 0 && strings.HasPrefix(rest, "(")) {
			continue // a keyword or a function call
		}
		if m[2] > 0 && strings.ContainsAny(expr[m[2]-1:m[2]], "0123456789.") {
			continue // the unit of a duration or a number's tail
		}
		ref := promqlRef{name: name, inRange: m[6] >= 0}
		if m[4] >= 0 {
			matchers := quotedRE.ReplaceAllString(expr[m[4]:m[5]], `""`)
			for _, l := range matcherRE.FindAllStringSubmatch(matchers, -1) {
				ref.labels = append(ref.labels, l[1])
			}
		}
		refs = append(refs, ref)
	}
	return refs
}

// TestMetricRefs pins what metricRefs finds in the shapes of expression
// the rules use, so that the rules test cannot pass by finding nothing.
func TestMetricRefs(t *testing.T) {
	got := metricRefs(`sum by (uplink) (increase(leafbox_uplink_dropped_total{reason=~"disk_low|x"}[15m])) > 0 and leafbox_uplink_connected == 1 and up{job="leafbox"} == 0 or 6 * 3600`)
	want := []promqlRef{
		{name: "leafbox_uplink_dropped_total", labels: []string{"reason"}, inRange: true},
		{name: "leafbox_uplink_connected"},
		{name: "up", labels: []string{"job"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("metricRefs = %v, want %v", got, want)
	}
}

// prometheusSeries are the series Prometheus itself adds to every scrape
// target, which a rule may use beside the target's own metrics.
var prometheusSeries = map[string][]string{"up": {"job", "instance"}}

// TestPrometheusRules runs the guide's promtool commands (check rules,
// test rules, and check config on the guide's prometheus.yml), then reads /metrics of a running leafbox with an uplink and a downlink
// (its hub down, which changes no family) and requires that every metric
// a rule names is exported, with the labels the rule matches on, and that
// every metric a range function reads is a counter or one the rule means
// to watch for changes (changes()).
func TestPrometheusRules(t *testing.T) {
	promtool(t)
	rules := filepath.Join(rulesDir, "leafbox-rules.yml")
	// The guide's prometheus.yml, with the rules at the path it names, and
	// its promtool commands.
	promDir := t.TempDir()
	copyFile(t, rules, filepath.Join(promDir, "leafbox-rules.yml"))
	promConfig := filepath.Join(promDir, "prometheus.yml")
	require.NoError(t, os.WriteFile(promConfig, []byte(substitute(t, "prometheus.yml", guideBlock(t, "prometheus.yml"),
		"/etc/prometheus/leafbox-rules.yml", filepath.Join(promDir, "leafbox-rules.yml"))), 0o600))
	runGuideBlock(t, "promtool", func(verb string) { t.Fatalf("systemctl %s in the promtool block", verb) },
		"/etc/prometheus/prometheus.yml", promConfig)

	var file struct {
		Groups []struct {
			Rules []struct {
				Alert string `yaml:"alert"`
				Expr  string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	b, err := os.ReadFile(rules)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(b, &file))

	dir := t.TempDir()
	cfg := filepath.Join(dir, "leafbox.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `server_name: rules-gw
listen: 127.0.0.1
port: -1
http_port: -1
jetstream:
  store_dir: %q
leafnodes:
  remotes:
    - url: nats-leaf://127.0.0.1:%d
uplinks:
  - name: telemetry
    subjects: [telemetry.>]
    hub_subject_prefix: site.gw.
    stream: TELEMETRY
    hub_domain: hub
downlinks:
  - name: commands
    stream: COMMANDS
    hub_domain: hub
    filter_subjects: [cmd.gw.>]
    hub_subject_prefix: cmd.gw.
    local_subject_prefix: cmd.
`, filepath.Join(dir, "state"), leaftest.FreePort(t)), 0o600))
	p := start(t, "run", "--config", cfg, "--ports-file-dir", dir)
	pf, _ := p.waitPorts(dir)
	metrics := parseMetrics(t, get(t, loopbackURL(t, pf.Monitoring).String()+"/metrics"))

	var used []string
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			refs := metricRefs(r.Expr)
			if len(refs) == 0 {
				t.Fatalf("alert %s: no metric found in %q", r.Alert, r.Expr)
			}
			for _, ref := range refs {
				used = append(used, ref.name)
				if labels, ok := prometheusSeries[ref.name]; ok {
					for _, l := range ref.labels {
						if !slices.Contains(labels, l) {
							t.Fatalf("alert %s: %s has no label %s", r.Alert, ref.name, l)
						}
					}
					continue
				}
				m, ok := metrics[ref.name]
				if !ok {
					t.Fatalf("alert %s uses %s, which leafbox does not export", r.Alert, ref.name)
				}
				for _, l := range ref.labels {
					if !m.labels[l] {
						t.Fatalf("alert %s matches label %s of %s, which has only %v", r.Alert, l, ref.name, m.labels)
					}
				}
				if ref.inRange && m.typ != "counter" && !strings.Contains(r.Expr, "changes(") {
					t.Fatalf("alert %s reads %s (a %s) over a range: rate and increase need counters", r.Alert, ref.name, m.typ)
				}
			}
		}
	}
	slices.Sort(used)
	t.Logf("%d metrics used by the rules, all exported: %v", len(slices.Compact(used)), slices.Compact(used))
	stopJS(t, p)
}
