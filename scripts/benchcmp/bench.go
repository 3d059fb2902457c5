package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// measurer runs scenarios against servers.
type measurer struct {
	nats    *natsCLI
	workDir string               // workDir receives one directory per run for natscli's CSV.
	logf    func(string, ...any) // logf reports progress.
	notes   []string             // notes are problems outside the figures, for the report.
}

// runRounds runs every scenario on both sides, rounds times. Within a
// round each scenario runs on one side and then the other, and the side
// that goes first alternates by round. It returns one result per metric,
// in scenario order, and a one-line description of each failure.
//
// A scenario that fails on a side (including its server failing to start)
// is not run on that side again, so one broken row costs at most one
// timeout per side. A server that dies during a run, or ctx ending, stops
// the rounds with an error.
func (m *measurer) runRounds(ctx context.Context, f *fleet, scs []scenario, rounds int) ([]metricResult, []string, error) {
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
			if sc.kind == kindDifference {
				continue // filled from the other rows once the rounds are done
			}
			rows := results[first[i] : first[i]+len(sc.metrics)]
			for _, side := range order {
				if rows[0].Failed[side] != "" || (sc.subjectOnly && side == sideReference) {
					continue
				}
				fail := func(label string, err error) {
					msg := fmt.Sprintf("%s on %s, round %d: %v", sc.metrics[0].Name, label, round+1, err)
					m.logf("FAILED %s", msg)
					failures = append(failures, firstLine(msg)) // the output tail went to the log
					for k := range rows {
						rows[k].Failed[side] = firstLine(err.Error())
					}
				}
				record := func(label string, values []float64) {
					parts := make([]string, len(values))
					for k, v := range values {
						rows[k].Values[side] = append(rows[k].Values[side], v)
						parts[k] = formatValue(v, rows[k].Unit) + " " + rows[k].Unit.String()
					}
					m.logf("round %d/%d %-44s %-26s %s", round+1, rounds, sc.metrics[0].Name, label, strings.Join(parts, ", "))
				}
				if g := sc.group(); g == groupLeaf || g == groupMQTT || g == groupMQTTListen || g == groupModbus {
					// A leaf, mqtt or modbus run starts and stops its own servers.
					measure := m.measureLeaf
					switch g {
					case groupMQTT:
						measure = m.measureMQTT
					case groupMQTTListen:
						measure = m.measureMQTTListen
					case groupModbus:
						measure = m.measureModbus
					}
					values, err := measure(ctx, f, sc, side)
					if ctx.Err() != nil {
						return nil, nil, ctx.Err()
					}
					if err != nil {
						fail(f.labels[side], err)
						continue
					}
					record(f.labels[side], values)
					continue
				}
				s, release, err := m.server(ctx, f, sc, side)
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				if err != nil {
					fail(serverLabel(f.labels[side], sc.sync), err)
					continue
				}
				subject := fmt.Sprintf("bench.%s.r%d.s%d", sc.slug, round, side)
				subszOK := s.subszErr == nil
				values, err := m.measure(ctx, s, sc, subject)
				if subszOK && s.subszErr != nil {
					note := fmt.Sprintf("Monitoring: %s's /subsz failed (%v), so the harness counted subscribers from /connz?subs=1 to know when they were ready.",
						s.label, firstLine(s.subszErr.Error()))
					m.logf("%s", note)
					m.notes = append(m.notes, note)
				}
				dead := s.alive()
				release()
				if ctx.Err() != nil {
					return nil, nil, ctx.Err()
				}
				if dead != nil {
					return nil, nil, fmt.Errorf("benchcmp: round %d, %s: %w", round+1, sc.metrics[0].Name, dead)
				}
				if err != nil {
					fail(s.label, err)
					continue
				}
				record(s.label, values)
			}
		}
	}
	fillDifferences(results, scs)
	return results, failures, nil
}

// server returns the server sc runs on for side, and a function to call
// when the run is over: a fresh server for scenarios that want one, the
// side's shared server for sc's sync mode otherwise.
func (m *measurer) server(ctx context.Context, f *fleet, sc scenario, side int) (*server, func(), error) {
	if sc.fresh {
		s, err := f.freshServer(ctx, side, sc.sync, sc.cipher)
		if err != nil {
			return nil, nil, err
		}
		return s, func() { f.stopFresh(s) }, nil
	}
	s, err := f.sharedServer(ctx, side, sc.sync)
	if err != nil {
		return nil, nil, err
	}
	return s, func() {}, nil
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
		if err := waitSubscribed(ctx, srv, subject, sc.subs, sub.done); err != nil {
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
		if err := waitSubscribed(ctx, srv, subject, 1, serve.done); err != nil {
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

	case kindJSAsync, kindJSSync:
		out := filepath.Join(dir, "pub.csv")
		_, err := m.nats.runFor(ctx, scaledTimeout(m.nats.timeout, sc.msgs), url, jsPublishArgs(sc, subject, out)...)
		// Delete the stream even after a failure: a memory stream left
		// behind would weigh on every later row.
		if rmErr := m.deleteStream(ctx, url, sc.streamName()); err == nil && rmErr != nil {
			err = rmErr
		}
		if err != nil {
			return nil, err
		}
		return rateFrom(out)

	case kindJSStored:
		// The server is fresh and is stopped after the run, store and all,
		// so the stream needs no deleting.
		out := filepath.Join(dir, "pub.csv")
		if _, err := m.nats.runFor(ctx, scaledTimeout(m.nats.timeout, sc.msgs), url, jsPublishArgs(sc, subject, out)...); err != nil {
			return nil, err
		}
		values, err := rateFrom(out)
		if err != nil {
			return nil, err
		}
		rss, err := m.steadyMiB(ctx, srv)
		if err != nil {
			return nil, err
		}
		values = append(values, rss)
		if sc.consume == 0 {
			return values, nil
		}
		out = filepath.Join(dir, "consume.csv")
		if _, err := m.nats.runFor(ctx, scaledTimeout(m.nats.timeout, sc.consume), url, "bench", "js", "consume", "--stream", sc.streamName(),
			"--clients", "1", "--msgs", strconv.Itoa(sc.consume), "--batch", "500", "--csv", out); err != nil {
			return nil, err
		}
		consumed, err := rateFrom(out)
		if err != nil {
			return nil, err
		}
		return append(values, consumed...), nil

	case kindJSReopen:
		// The server is fresh: restarting it keeps its store, and the
		// fleet removes that after the run.
		out := filepath.Join(dir, "pub.csv")
		if _, err := m.nats.runFor(ctx, scaledTimeout(m.nats.timeout, sc.msgs), url, jsPublishArgs(sc, subject, out)...); err != nil {
			return nil, err
		}
		start, err := srv.restart(ctx, startTimeout+scaledTimeout(m.nats.timeout, sc.msgs))
		if err != nil {
			return nil, err
		}
		opened, err := waitStreamMsgs(ctx, srv, sc.streamName(), uint64(sc.msgs), scaledTimeout(m.nats.timeout, sc.msgs))
		if err != nil {
			return nil, err
		}
		rss, err := m.steadyMiB(ctx, srv)
		if err != nil {
			return nil, err
		}
		return []float64{float64(opened.Sub(start)) / float64(time.Millisecond), rss}, nil
	}
	return nil, fmt.Errorf("benchcmp: unknown scenario kind %d", sc.kind)
}

// steadyMiB reads the server's VmRSS once steady, in MiB, noting in the
// log when it was still moving at rssTimeout.
func (m *measurer) steadyMiB(ctx context.Context, srv *server) (float64, error) {
	rss, steady, err := steadyRSS(ctx, srv)
	if err != nil {
		return 0, err
	}
	if !steady {
		m.logf("%s: RSS still moving after %v; took the last reading", srv.label, rssTimeout)
	}
	return mib(rss), nil
}

// jsPublishArgs returns the natscli arguments of a JetStream publish run
// for sc: one client publishing sc.msgs messages of sc.size bytes on
// subject into sc's stream, which it creates (or updates) and purges
// first, writing its figures to the CSV file out. kindJSSync publishes
// synchronously, the other kinds asynchronously with 500 PubAcks
// outstanding.
func jsPublishArgs(sc scenario, subject, out string) []string {
	args := []string{"bench", "js", "pub", "async", subject, "--batch", "500"}
	if sc.kind == kindJSSync {
		args = []string{"bench", "js", "pub", "sync", subject}
	}
	args = append(args, "--create", "--purge", "--storage", sc.storage, "--stream", sc.streamName(),
		"--clients", "1", "--msgs", strconv.Itoa(sc.msgs), "--size", strconv.Itoa(sc.size), "--csv", out)
	if sc.kind == kindJSReopen {
		// natscli's 1 GB default holds about 5,000,000 such messages.
		args = append(args, "--maxbytes", "8GB")
	}
	return args
}

// jsTimeoutMsgs is how many JetStream messages one -timeout covers: a
// run of more gets a multiple of it, since JetStream rates are a few
// tens of thousands of messages per second where core rates are millions.
const jsTimeoutMsgs = 250_000

// scaledTimeout returns the limit on a JetStream run of msgs messages:
// base for up to jsTimeoutMsgs, one more base for each further
// jsTimeoutMsgs or part of it.
func scaledTimeout(base time.Duration, msgs int) time.Duration {
	n := max(1, (msgs+jsTimeoutMsgs-1)/jsTimeoutMsgs)
	return base * time.Duration(n)
}

// deleteStream deletes a JetStream stream with `nats stream rm --force`.
func (m *measurer) deleteStream(ctx context.Context, url, name string) error {
	_, err := m.nats.run(ctx, url, "stream", "rm", name, "--force")
	return err
}

// Bounds of the wait for a steady resident set.
const (
	rssPoll      = 250 * time.Millisecond // between readings
	rssWindow    = 5                      // readings that must agree
	rssTolerance = 0.01                   // how far they may spread, as a fraction of the largest
	rssTimeout   = 10 * time.Second       // when to give up and take the last reading
)

// steadyRSS reads the server's VmRSS every rssPoll until the last
// rssWindow readings agree within rssTolerance, and returns the last
// reading in bytes. steady is false when rssTimeout passed first.
func steadyRSS(ctx context.Context, s *server) (rss int64, steady bool, err error) {
	deadline := time.Now().Add(rssTimeout)
	var readings []int64
	for {
		if err := s.alive(); err != nil {
			return 0, false, err
		}
		v, err := readStatusKB(s.pid(), "VmRSS")
		if err != nil {
			return 0, false, err
		}
		readings = append(readings, v)
		if rssSteady(readings, rssWindow, rssTolerance) {
			return v, true, nil
		}
		if time.Now().After(deadline) {
			return v, false, nil
		}
		if err := pause(ctx, rssPoll); err != nil {
			return 0, false, err
		}
	}
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
