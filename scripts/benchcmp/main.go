// Command benchcmp compares leafbox with nats-server under the official
// `nats bench` load generator (natscli) and prints a markdown table of
// median ratios. scripts/bench builds it and leafbox and runs it; run that
// script rather than this program directly.
//
// Every server runs on loopback with kernel-chosen ports read from a ports
// file and with JetStream on, in a new store directory of its own. The
// program starts one leafbox and one nats-server on their default
// settings, reads their idle RSS, then for each round runs every
// scenario on both sides in turn (the side that goes first alternates by
// round): core NATS (publish-only 16 B and 1 KiB, one publisher to one and
// to four subscribers, request-reply), then JetStream (async and sync
// publish on memory and file storage, pull consume, RSS with stored
// messages). File-storage rows run under three sync policies: each
// server's default, and both servers on "always" and on a 2-minute
// interval, the latter two on extra servers started from a configuration
// file when first needed. The stored-message scenarios start a server of
// each kind for each run and stop it afterwards. Each row's value is the
// median over rounds; the table also shows the default servers' idle and
// peak RSS. The uplink rows (leaf.go) start their own hub and gateway for
// every run. The mqtt rows (mqtt.go) start their own servers, and a Mosquitto for
// leafbox's bridge, for every run. The mqttlisten rows (mqttlisten.go)
// start leafbox with its MQTT listener, Mosquitto and nats-server with its
// MQTT listener for every run. -only picks row groups (core, js, store,
// leaf, mqtt, mqttlisten, modbus). Every child process
// runs in its own process group and is killed on exit, on a timeout, or on
// SIGINT/SIGTERM.
//
// A row that fails on one side (non-zero exit, timeout, a server that
// does not start) is reported in the table and skipped on that side in
// later rounds; the program then exits 1. A server that dies ends the run
// at once, also with exit 1. Usage errors exit 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// config is the parsed command line.
type config struct {
	leafboxBin   string
	leafboxStyle serverStyle
	label        string
	natsServer   string
	natsCLI      string
	rounds       int
	quick        bool
	out          string
	timeout      time.Duration
	workDir      string
	keep         bool
	only         map[string]bool // only holds the scenario groups to run.
}

// errRowsFailed reports that the table is complete but some rows failed.
var errRowsFailed = errors.New("benchcmp: some rows failed; see the table")

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, cfg, os.Stdout, os.Stderr)
	interrupted := ctx.Err() != nil
	stop()
	if err != nil {
		if interrupted {
			err = fmt.Errorf("interrupted (%w)", err)
		}
		fmt.Fprintln(os.Stderr, "benchcmp: FAILED:", strings.TrimPrefix(err.Error(), "benchcmp: "))
		os.Exit(1)
	}
}

// parseFlags parses args into a config.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	var style, only string
	fs := flag.NewFlagSet("benchcmp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.leafboxBin, "leafbox", "", "server under test: path to the leafbox binary (required)")
	fs.StringVar(&style, "leafbox-style", string(styleLeafbox), "command line the -leafbox binary takes: leafbox, or nats-server to let nats-server stand in")
	fs.StringVar(&cfg.label, "label", "leafbox", "name of the server under test in the table")
	fs.StringVar(&cfg.natsServer, "nats-server", "nats-server", "reference server binary")
	fs.StringVar(&cfg.natsCLI, "nats", "nats", "natscli binary that runs `nats bench`")
	fs.IntVar(&cfg.rounds, "rounds", 5, "rounds; each cell is the median over rounds")
	fs.BoolVar(&cfg.quick, "quick", false, "smoke test: 1 round (unless -rounds is given) and 10x fewer messages")
	fs.StringVar(&cfg.out, "out", "", "also write the markdown table to this file")
	fs.DurationVar(&cfg.timeout, "timeout", 60*time.Second, "limit on each nats command; JetStream runs of more than 250,000 messages get one more for each further 250,000")
	fs.StringVar(&cfg.workDir, "workdir", "", "directory for server logs, ports files and CSVs (default: a new temporary directory, removed at exit)")
	fs.BoolVar(&cfg.keep, "keep", false, "keep the temporary work directory")
	fs.StringVar(&only, "only", strings.Join(groups, ","), "comma-separated row groups to run: core (core NATS), js (JetStream), store (file store RSS and pull consume), leaf or uplink (uplink toward a hub), mqtt (MQTT → subject), mqttlisten (leafbox's MQTT listener vs Mosquitto and nats-server's), modbus (Modbus poll cycle, leafbox only)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: benchcmp -leafbox PATH [flags]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	cfg.leafboxStyle = serverStyle(style)
	var err error
	if cfg.only, err = parseOnly(only); err != nil {
		return cfg, err
	}
	if _, err := serverCommand(cfg.leafboxStyle, syncDefault, "", ""); err != nil {
		return cfg, err
	}
	roundsSet := false
	fs.Visit(func(f *flag.Flag) { roundsSet = roundsSet || f.Name == "rounds" })
	if cfg.quick && !roundsSet {
		cfg.rounds = 1
	}
	switch {
	case cfg.leafboxBin == "":
		return cfg, errors.New("-leafbox is required")
	case cfg.rounds < 1:
		return cfg, fmt.Errorf("-rounds %d: need at least 1", cfg.rounds)
	case cfg.timeout <= 0:
		return cfg, fmt.Errorf("-timeout %v: must be positive", cfg.timeout)
	}
	for _, p := range []*string{&cfg.leafboxBin, &cfg.natsServer, &cfg.natsCLI} {
		path, err := exec.LookPath(*p)
		if err == nil {
			path, err = filepath.Abs(path) // servers run in their own directories
		}
		if err != nil {
			return cfg, fmt.Errorf("tool not found: %w", err)
		}
		*p = path
	}
	return cfg, nil
}

// parseOnly parses the -only list into a set of groups.
func parseOnly(list string) (map[string]bool, error) {
	only := map[string]bool{}
	for g := range strings.SplitSeq(list, ",") {
		g = strings.TrimSpace(g)
		if g == groupUplinkAlias {
			g = groupLeaf
		}
		if !slices.Contains(groups, g) {
			return nil, fmt.Errorf("-only %q: unknown group %q (want a comma-separated list of %s)", list, g, strings.Join(groups, ", "))
		}
		only[g] = true
	}
	return only, nil
}

// run performs the whole benchmark and writes the report to stdout (and
// cfg.out); progress goes to stderr.
//
// The work directory holds the servers' logs and natscli's CSV files. A
// temporary one is removed when the run succeeds and kept, with its path
// printed, when anything failed.
func run(ctx context.Context, cfg config, stdout, stderr io.Writer) (err error) {
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "bench: "+format+"\n", args...) }
	started := time.Now()

	workDir := cfg.workDir
	if workDir == "" {
		dir, mkErr := os.MkdirTemp("", "leafbox-bench-")
		if mkErr != nil {
			return fmt.Errorf("benchcmp: %w", mkErr)
		}
		workDir = dir
		defer func() {
			if err == nil && !cfg.keep {
				os.RemoveAll(dir)
				return
			}
			logf("server logs and natscli output kept in %s", dir)
		}()
	} else if err := os.MkdirAll(workDir, 0o755); err != nil {
		return fmt.Errorf("benchcmp: %w", err)
	}

	w := defaultWorkload(cfg.quick)
	rep := report{
		Labels: [2]string{cfg.label, "nats-server"},
		Versions: [2]string{
			serverVersion(ctx, cfg.leafboxBin, cfg.leafboxStyle),
			serverVersion(ctx, cfg.natsServer, styleNATS),
		},
		Tool:     "natscli " + version(ctx, cfg.natsCLI, "--version"),
		Machine:  hostMachine(),
		Date:     started,
		Rounds:   cfg.rounds,
		Workload: w.describe(cfg.only),
	}
	if cfg.only[groupJS] {
		rep.Notes = append(rep.Notes, syncNote)
	}
	if len(cfg.only) == 1 && cfg.only[groupMQTTListen] {
		// Each row names its reference: Mosquitto or nats-server.
		rep.Labels[1] = "reference"
		rep.Versions[1] = "(" + refMosquitto + ": " + mosquittoVersion(ctx) + "; nats-server " + rep.Versions[1] + ")"
	}
	if rep.Labels[0] == rep.Labels[1] {
		rep.Labels[0] += " (under test)"
	}

	// Start the default servers first and read their idle memory; the
	// rows start any other server they need.
	f := newFleet(rep.Labels, [2]string{cfg.leafboxBin, cfg.natsServer},
		[2]serverStyle{cfg.leafboxStyle, styleNATS}, workDir, cfg.keep, logf)
	defer f.stopAll()
	// Only the core and JetStream rows run on the default servers.
	shared := cfg.only[groupCore] || cfg.only[groupJS]
	var servers [2]*server
	var idle metricResult
	if shared {
		for side := range 2 {
			if servers[side], err = f.sharedServer(ctx, side, syncDefault); err != nil {
				return err
			}
		}
		if idle, err = memoryRow(servers, "idle RSS", "VmRSS"); err != nil {
			return err
		}
		logf("idle RSS: %s %.1f MiB, %s %.1f MiB", rep.Labels[0], idle.Values[0][0], rep.Labels[1], idle.Values[1][0])
	}

	nats, err := newNatsCLI(cfg.natsCLI, workDir, cfg.timeout)
	if err != nil {
		return err
	}
	m := &measurer{nats: nats, workDir: workDir, logf: logf}
	scs := selectGroups(scenarios(w), cfg.only)
	if prefix := os.Getenv("BENCH_SLUG"); prefix != "" {
		// An experiment on one row: only the scenarios whose slug starts
		// with prefix (see scenarios).
		scs = slices.DeleteFunc(scs, func(sc scenario) bool { return !strings.HasPrefix(sc.slug, prefix) })
		if len(scs) == 0 {
			return fmt.Errorf("BENCH_SLUG=%q matches no scenario of the groups run", prefix)
		}
	}
	results, failures, err := m.runRounds(ctx, f, scs, cfg.rounds)
	if err != nil {
		return err
	}
	if shared {
		peak, err := memoryRow(servers, "peak RSS", "VmHWM")
		if err != nil {
			return err
		}
		results = append(results, idle, peak)
	}
	rep.Metrics = tableOrder(results)
	rep.Notes = append(rep.Notes, m.notes...)
	rep.Errors = failures
	rep.Machine.LoadEnd = readLoadAverage()

	if err := writeReport(stdout, cfg.out, rep); err != nil {
		return err
	}
	logf("done in %v", time.Since(started).Round(time.Second))
	if len(rep.Errors) > 0 {
		return errRowsFailed
	}
	return nil
}

// memoryRow reads one /proc/PID/status memory figure (VmRSS, VmHWM) of
// each server into a table row.
func memoryRow(servers [2]*server, name, key string) (metricResult, error) {
	row := metricResult{metric: metric{Name: name, Unit: unitMiB, Better: lowerIsBetter, Order: orderMemory}}
	for side, s := range servers {
		if err := s.alive(); err != nil {
			return row, err
		}
		b, err := readStatusKB(s.pid(), key)
		if err != nil {
			return row, err
		}
		row.Values[side] = []float64{mib(b)}
	}
	return row, nil
}

// writeReport writes the markdown report to stdout and, if path is not
// empty, to the file at path.
func writeReport(stdout io.Writer, path string, rep report) error {
	if err := renderMarkdown(stdout, rep); err != nil {
		return err
	}
	if path == "" {
		return nil
	}
	if len(rep.Errors) > 0 {
		// FILE is what gets published; a run with failures is not.
		return fmt.Errorf("benchcmp: %d harness failures: not writing %s (the table above is not for publication)", len(rep.Errors), path)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("benchcmp: %w", err)
	}
	if err := renderMarkdown(f, rep); err != nil {
		f.Close()
		return fmt.Errorf("benchcmp: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("benchcmp: writing %s: %w", path, err)
	}
	return nil
}

// serverVersion asks a server binary for its version.
func serverVersion(ctx context.Context, bin string, style serverStyle) string {
	if style == styleNATS {
		return strings.TrimPrefix(version(ctx, bin, "--version"), "nats-server: ")
	}
	return strings.TrimPrefix(version(ctx, bin, "version"), "leafbox ")
}

// mib converts bytes to mebibytes.
func mib(b int64) float64 { return float64(b) / (1 << 20) }

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
