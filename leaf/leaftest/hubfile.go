package leaftest

import (
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// StartHubFile starts nats-server with the configuration file conf, used
// as it is except for the client port, which is bound on 127.0.0.1 to a
// free port (the -a and -p flags override the file's listen). name is
// the server_name the file sets. The file must have a leafnodes listener;
// the hub's leafnode port is read from its log, so the file may say -1.
// StartHubFile returns once the server is ready; it is killed in
// t.Cleanup. Restart keeps the client port; the leafnode port is the
// file's again.
func StartHubFile(t testing.TB, name, conf string) *Hub {
	t.Helper()
	h := &Hub{t: t, bin: Binary(t), conf: conf, Name: name}
	t.Cleanup(h.Kill)
	h.start(-1)
	return h
}

// StartClusterFiles starts one node per configuration file with
// StartHubFile, names[i] from confs[i], in order, and returns once every
// node knows the JetStream metadata leader. The files must route the
// nodes to each other and enable JetStream.
func StartClusterFiles(t testing.TB, names, confs []string) *Cluster {
	t.Helper()
	if len(names) != len(confs) {
		t.Fatalf("leaftest: %d names for %d configuration files", len(names), len(confs))
	}
	c := &Cluster{t: t}
	for i, conf := range confs {
		c.Nodes = append(c.Nodes, StartHubFile(t, names[i], conf))
	}
	c.WaitMetaLeader()
	return c
}

var reloadedRE = regexp.MustCompile(`Reloaded server configuration|Failed to reload server configuration`)

// Reload has the hub read its configuration file again (SIGHUP) and waits
// until it logs that it did. It fails the test if the hub refuses the
// new configuration. It is meant for one reload per start: a second one
// would find the first one's log line.
func (h *Hub) Reload() {
	h.t.Helper()
	h.mu.Lock()
	cmd := h.cmd
	h.mu.Unlock()
	if cmd == nil {
		h.t.Fatalf("leaftest: reload %s: not running", h.Name)
		return
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		h.t.Fatalf("leaftest: reload %s: %v", h.Name, err)
	}
	if line := h.WaitLog(reloadedRE, Timeout); strings.Contains(line, "Failed") {
		h.t.Fatalf("leaftest: %s refused its new configuration: %s", h.Name, line)
	}
}
