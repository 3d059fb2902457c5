package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// fleet starts the servers the rows run on. Each side (leafbox, the
// reference) has one shared server per sync mode, started when a row
// first needs it and kept until the end, and any number of fresh servers
// that one run starts and stops for itself. Every server gets its own
// directory and so its own empty JetStream store.
type fleet struct {
	labels  [2]string      // labels name the sides in the table.
	bins    [2]string      // bins are the server binaries.
	styles  [2]serverStyle // styles are the command lines the binaries take.
	workDir string
	keep    bool // keep leaves a fresh server's store on disk after it stops.
	logf    func(string, ...any)

	shared  map[fleetKey]*server
	refused map[fleetKey]error // refused remembers servers that failed to start.
	fresh   int                // fresh counts fresh servers, to name their directories.
}

// fleetKey identifies a shared server.
type fleetKey struct {
	side int
	sync syncMode
}

// newFleet returns a fleet that has started nothing yet.
func newFleet(labels, bins [2]string, styles [2]serverStyle, workDir string, keep bool, logf func(string, ...any)) *fleet {
	return &fleet{labels: labels, bins: bins, styles: styles, workDir: workDir, keep: keep, logf: logf,
		shared: map[fleetKey]*server{}, refused: map[fleetKey]error{}}
}

// serverLabel names a side's server running in sync mode m, such as
// "nats-server" or "nats-server (sync always)".
func serverLabel(label string, m syncMode) string {
	if m == syncDefault {
		return label
	}
	return fmt.Sprintf("%s (sync %s)", label, m)
}

// sharedServer returns side's shared server for sync mode m, starting it
// on first use. A server that failed to start is not tried again.
func (f *fleet) sharedServer(ctx context.Context, side int, m syncMode) (*server, error) {
	key := fleetKey{side, m}
	if s := f.shared[key]; s != nil {
		return s, nil
	}
	if err := f.refused[key]; err != nil {
		return nil, err
	}
	dir := filepath.Join(f.workDir, fmt.Sprintf("server%d-%s", side, dirName(m)))
	s, err := startServer(ctx, serverLabel(f.labels[side], m), f.bins[side], f.styles[side], m, "", dir)
	if err != nil {
		f.refused[key] = err
		return nil, err
	}
	f.shared[key] = s
	f.logf("%s pid %d on %s, monitoring %s", s.label, s.pid(), s.clientAddr, s.monitorURL)
	return s, nil
}

// freshServer starts a server for one run, its store encrypted with
// cipher unless that is empty. The caller ends it with stopFresh.
func (f *fleet) freshServer(ctx context.Context, side int, m syncMode, cipher string) (*server, error) {
	f.fresh++
	dir := filepath.Join(f.workDir, fmt.Sprintf("fresh%03d-server%d-%s", f.fresh, side, dirName(m)))
	label := serverLabel(f.labels[side], m)
	if cipher != "" {
		label += " (cipher " + cipher + ")"
	}
	return startServer(ctx, label, f.bins[side], f.styles[side], m, cipher, dir)
}

// stopFresh stops a fresh server and, unless the fleet keeps them,
// removes its store; the log stays for the work directory's record.
func (f *fleet) stopFresh(s *server) {
	s.stop()
	if !f.keep {
		os.RemoveAll(filepath.Join(s.dir, "store"))
	}
}

// stopAll stops every shared server.
func (f *fleet) stopAll() {
	for _, s := range f.shared {
		s.stop()
	}
}

// dirName turns a sync mode into a directory name part.
func dirName(m syncMode) string {
	switch m {
	case syncDefault:
		return "default"
	case syncAlways:
		return "always"
	}
	return "sync" + string(m)
}
