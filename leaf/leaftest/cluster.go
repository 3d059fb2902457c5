package leaftest

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// ClusterOptions configures a hub cluster.
type ClusterOptions struct {
	// Name is the cluster's name and the prefix of its nodes' server
	// names ("<name>-1" …); "" is "hub".
	Name string
	// Nodes is the number of nodes; 0 is 3.
	Nodes int
	// Domain is the JetStream domain; "" is "hub".
	Domain string
	// Leaf and Config are added to every node, as in HubOptions.
	Leaf, Config string
}

// Cluster is a nats-server cluster with JetStream used as a leafnode hub:
// every node has a client port, a leafnode port and a JetStream store of
// its own, and can be killed and restarted with its ports and store
// intact.
//
// # Ports
//
// Routes must name each other's cluster ports before any node starts, so
// those are picked with FreePort (a free port below the kernel's
// ephemeral range, probed with a listen): only another explicit bind
// could take one in the moment between, which would fail the start
// loudly, never silently. Client and leafnode ports
// are bound as -1 by the first start, read from the node's log and pinned
// in its configuration for restarts, as StartHub does.
type Cluster struct {
	t testing.TB
	// Nodes are the cluster's servers, in start order.
	Nodes []*Hub
}

var metaLeaderRE = regexp.MustCompile(`JetStream cluster new metadata leader|Self is new JetStream cluster metadata leader`)

// StartCluster starts a cluster of real nats-server nodes on 127.0.0.1
// with JetStream and returns once every node is ready and knows the
// JetStream metadata leader. Every node is killed in t.Cleanup.
func StartCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "hub"
	}
	if opts.Nodes == 0 {
		opts.Nodes = 3
	}
	if opts.Domain == "" {
		opts.Domain = "hub"
	}
	routePorts := make([]int, opts.Nodes)
	for i := range routePorts {
		routePorts[i] = FreePort(t)
	}
	c := &Cluster{t: t}
	for i := range opts.Nodes {
		var routes []string
		for j, p := range routePorts {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
			}
		}
		conf := fmt.Sprintf("jetstream { store_dir: %q, domain: %s }\n"+
			"cluster { name: %s, listen: \"127.0.0.1:%d\", routes: [%s] }\n%s",
			filepath.Join(t.TempDir(), "js"), opts.Domain, opts.Name, routePorts[i],
			strings.Join(routes, ", "), opts.Config)
		c.Nodes = append(c.Nodes, StartHub(t, HubOptions{
			Name:   fmt.Sprintf("%s-%d", opts.Name, i+1),
			Leaf:   opts.Leaf,
			Config: conf,
		}))
	}
	c.WaitMetaLeader()
	return c
}

// LeafURLs returns every node's leafnode URL, in node order.
func (c *Cluster) LeafURLs() []string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.LeafURL()
	}
	return out
}

// ClientURLs returns every node's client URL joined by commas, the form
// nats.Connect takes for a cluster.
func (c *Cluster) ClientURLs() string {
	out := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		out[i] = n.ClientURL()
	}
	return strings.Join(out, ",")
}

// Node returns the node whose server name is name, or nil.
func (c *Cluster) Node(name string) *Hub {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// KillAll kills every node.
func (c *Cluster) KillAll() {
	for _, n := range c.Nodes {
		n.Kill()
	}
}

// RestartAll starts every node that is not running again, with its ports
// and store, and waits until each knows the metadata leader.
func (c *Cluster) RestartAll() {
	c.t.Helper()
	for _, n := range c.Nodes {
		if !n.Running() {
			n.Restart()
		}
	}
	c.WaitMetaLeader()
}

// WaitMetaLeader waits until every running node has logged, since it
// last started, that a JetStream metadata leader was elected.
func (c *Cluster) WaitMetaLeader() {
	c.t.Helper()
	for _, n := range c.Nodes {
		if n.Running() {
			n.WaitLog(metaLeaderRE, Timeout)
		}
	}
}

// Running reports whether the node's process runs.
func (h *Hub) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cmd != nil
}

// WaitLog waits until a line of the hub's log since it last started
// matches re and returns it; it fails the test after timeout.
func (h *Hub) WaitLog(re *regexp.Regexp, timeout time.Duration) string {
	h.t.Helper()
	h.mu.Lock()
	logs := h.logs
	h.mu.Unlock()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	seen := 0
	for {
		logs.mu.Lock()
		lines := logs.lines[seen:]
		seen = len(logs.lines)
		if logs.changed == nil {
			logs.changed = make(chan struct{})
		}
		changed := logs.changed
		logs.mu.Unlock()
		for _, l := range lines {
			if re.MatchString(l) {
				return l
			}
		}
		select {
		case <-changed:
		case <-deadline.C:
			h.t.Fatalf("leaftest: %s logged no line matching %q within %v:\n%s", h.Name, re, timeout, logs.String())
			return ""
		}
	}
}
