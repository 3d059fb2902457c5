package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// workload sets the message counts and sizes of every row.
type workload struct {
	PubMsgs  int // PubMsgs is messages per publish-only run.
	SubMsgs  int // SubMsgs is messages per publisher→subscriber run (each subscriber receives all).
	Requests int // Requests is sequential requests per request-reply run.
	ReqSize  int // ReqSize is the request payload in bytes.
}

// defaultWorkload is sized so a five-round run takes a few minutes on two
// cores; quick divides the counts by ten.
func defaultWorkload(quick bool) workload {
	w := workload{PubMsgs: 1_000_000, SubMsgs: 1_000_000, Requests: 20_000, ReqSize: 128}
	if quick {
		w.PubMsgs /= 10
		w.SubMsgs /= 10
		w.Requests /= 10
	}
	return w
}

// describe returns the workload lines of the report.
func (w workload) describe() []string {
	return []string{
		fmt.Sprintf("Publish-only: %s messages from 1 `nats bench pub` client, no subscribers; the publisher's rate",
			groupThousands(int64(w.PubMsgs))),
		fmt.Sprintf("Pub→sub: %s messages of 16 B from 1 publisher, each subscriber receives all; the subscribers' rate (for 1→4 the sum over the longest subscriber's window)",
			groupThousands(int64(w.SubMsgs))),
		fmt.Sprintf("Request-reply: %s sequential requests of %d B from 1 `nats bench service request` client to 1 `nats bench service serve` responder; rate and latency percentiles as natscli measures them",
			groupThousands(int64(w.Requests)), w.ReqSize),
		"RSS: idle is VmRSS after start-up and one client handshake; peak is VmHWM after the last round",
	}
}

// scenarioKind selects how a scenario drives the server.
type scenarioKind int

const (
	kindPublish scenarioKind = iota // nats bench pub alone
	kindFanout                      // nats bench sub, then nats bench pub
	kindRequest                     // nats bench service serve, then request
)

// scenario is one workload that yields one or more table rows.
type scenario struct {
	slug    string // slug names the scenario in subjects and file names.
	kind    scenarioKind
	size    int // size is the payload in bytes.
	subs    int // subs is the number of subscribing clients (kindFanout).
	msgs    int
	metrics []metric // metrics are the rows the scenario fills, in the order measure returns them.
}

// scenarios returns the benchmark rows in table order.
func scenarios(w workload) []scenario {
	rate := func(name string) []metric { return []metric{{Name: name, Unit: unitRate, Better: higherIsBetter}} }
	return []scenario{
		{slug: "pub16", kind: kindPublish, size: 16, msgs: w.PubMsgs, metrics: rate("publish-only 16 B")},
		{slug: "pub1k", kind: kindPublish, size: 1024, msgs: w.PubMsgs, metrics: rate("publish-only 1 KiB")},
		{slug: "fan1", kind: kindFanout, size: 16, subs: 1, msgs: w.SubMsgs, metrics: rate("1 publisher → 1 subscriber 16 B")},
		{slug: "fan4", kind: kindFanout, size: 16, subs: 4, msgs: w.SubMsgs, metrics: rate("1 publisher → 4 subscribers 16 B")},
		{slug: "req", kind: kindRequest, size: w.ReqSize, subs: 1, msgs: w.Requests, metrics: []metric{
			{Name: "request-reply", Unit: unitRequests, Better: higherIsBetter},
			{Name: "request-reply p50 latency", Unit: unitMicros, Better: lowerIsBetter},
			{Name: "request-reply p99 latency", Unit: unitMicros, Better: lowerIsBetter},
		}},
	}
}

// measurer runs scenarios against servers.
type measurer struct {
	nats    *natsCLI
	workDir string               // workDir receives one directory per run for natscli's CSV.
	logf    func(string, ...any) // logf reports progress.
}

// runRounds runs every scenario on both servers, rounds times. Within a
// round each scenario runs on one server and then the other, and the
// server that goes first alternates by round. It returns one result per
// metric, in table order, and a one-line description of each failure.
//
// A scenario that fails on a server is not run on that server again, so
// one broken row costs at most one timeout per server. A server that dies,
// or ctx ending, stops the rounds with an error.
func (m *measurer) runRounds(ctx context.Context, servers [2]*server, scs []scenario, rounds int) ([]metricResult, []string, error) {
	var results []metricResult
	var failures []string
	first := make([]int, len(scs)) // first[i] is the index of scs[i]'s first metric in results
	for i, sc := range scs {
		first[i] = len(results)
		for _, mt := range sc.metrics {
			results = append(results, metricResult{metric: mt})
		}
	}
	for round := range rounds {
		order := [2]int{sideSubject, sideReference}
		if round%2 == 1 {
			order = [2]int{sideReference, sideSubject}
		}
		for i, sc := range scs {
			rows := results[first[i] : first[i]+len(sc.metrics)]
			for _, side := range order {
				s := servers[side]
				if rows[0].Failed[side] != "" {
					continue
				}
				subject := fmt.Sprintf("bench.%s.r%d.s%d", sc.slug, round, side)
				values, err := m.measure(ctx, s, sc, subject)
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				if dead := s.alive(); dead != nil {
					return nil, nil, fmt.Errorf("benchcmp: round %d, %s: %w", round+1, sc.metrics[0].Name, dead)
				}
				if err != nil {
					msg := fmt.Sprintf("%s on %s, round %d: %v", sc.metrics[0].Name, s.label, round+1, err)
					m.logf("FAILED %s", msg)
					failures = append(failures, firstLine(msg)) // the output tail went to the log
					for k := range rows {
						rows[k].Failed[side] = firstLine(err.Error())
					}
					continue
				}
				parts := make([]string, len(values))
				for k, v := range values {
					rows[k].Values[side] = append(rows[k].Values[side], v)
					parts[k] = formatValue(v, rows[k].Unit) + " " + rows[k].Unit.String()
				}
				m.logf("round %d/%d %-34s %-24s %s", round+1, rounds, sc.metrics[0].Name, s.label, strings.Join(parts, ", "))
			}
		}
	}
	return results, failures, nil
}

// measure runs sc once against srv and returns one value per sc.metrics.
// subject must be unique to this run, so that readiness checks count only
// this run's subscriptions.
func (m *measurer) measure(ctx context.Context, srv *server, sc scenario, subject string) ([]float64, error) {
	url := "nats://" + srv.clientAddr
	if err := waitQuiet(ctx, srv.monitorURL); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(m.workDir, sc.slug+"-")
	if err != nil {
		return nil, fmt.Errorf("benchcmp: %w", err)
	}
	size := strconv.Itoa(sc.size)
	msgs := strconv.Itoa(sc.msgs)

	switch sc.kind {
	case kindPublish:
		out := filepath.Join(dir, "pub.csv")
		if _, err := m.nats.run(ctx, url, "bench", "pub", subject,
			"--clients", "1", "--msgs", msgs, "--size", size, "--csv", out); err != nil {
			return nil, err
		}
		return rateFrom(out)

	case kindFanout:
		out := filepath.Join(dir, "sub.csv")
		sub, err := m.nats.start(ctx, url, "bench", "sub", subject,
			"--clients", strconv.Itoa(sc.subs), "--msgs", msgs, "--size", size, "--csv", out)
		if err != nil {
			return nil, err
		}
		defer sub.stop() // a no-op once it has finished
		if err := waitSubscribed(ctx, srv.monitorURL, subject, sc.subs, sub.done); err != nil {
			return nil, fmt.Errorf("%s: %w%s", sub.name, err, sub.outputTail())
		}
		if _, err := m.nats.run(ctx, url, "bench", "pub", subject,
			"--clients", "1", "--msgs", msgs, "--size", size); err != nil {
			return nil, err
		}
		if err := sub.wait(); err != nil {
			return nil, err
		}
		return rateFrom(out)

	case kindRequest:
		out := filepath.Join(dir, "request.csv")
		serve, err := m.nats.start(ctx, url, "bench", "service", "serve", subject, "--clients", "1")
		if err != nil {
			return nil, err
		}
		defer serve.stop()
		if err := waitSubscribed(ctx, srv.monitorURL, subject, 1, serve.done); err != nil {
			return nil, fmt.Errorf("%s: %w%s", serve.name, err, serve.outputTail())
		}
		if _, err := m.nats.run(ctx, url, "bench", "service", "request", subject,
			"--clients", "1", "--msgs", msgs, "--size", size, "--csv", out); err != nil {
			return nil, err
		}
		rows, err := readCSV(out)
		if err != nil {
			return nil, err
		}
		rps, err := aggregateRate(rows)
		if err != nil {
			return nil, err
		}
		p50, p99, err := worstLatency(rows)
		if err != nil {
			return nil, err
		}
		return []float64{rps, p50, p99}, nil
	}
	return nil, fmt.Errorf("benchcmp: unknown scenario kind %d", sc.kind)
}

// readCSV parses the natscli CSV file at path.
func readCSV(path string) ([]clientStats, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("benchcmp: natscli wrote no csv: %w", err)
	}
	defer f.Close()
	rows, err := parseBenchCSV(f)
	if err != nil {
		return nil, fmt.Errorf("%w (in %s)", err, path)
	}
	return rows, nil
}

// rateFrom returns the aggregate rate recorded in the CSV file at path.
func rateFrom(path string) ([]float64, error) {
	rows, err := readCSV(path)
	if err != nil {
		return nil, err
	}
	r, err := aggregateRate(rows)
	if err != nil {
		return nil, err
	}
	return []float64{r}, nil
}
