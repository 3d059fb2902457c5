package main

import (
	"fmt"
	"testing"

	"github.com/leafbox/leafbox/leaf/leaftest"
)

// TestRunLeafPortFlag runs the binary with --leaf-port -1: the ports file
// records the leafnode port, and a real nats-server configured with a
// leafnodes remote attaches there and exchanges messages and requests
// both ways.
func TestRunLeafPortFlag(t *testing.T) {
	dir := t.TempDir()
	p := start(t, "run", "--addr", "127.0.0.1", "--port", "-1", "--http-port", "-1", "--ports-file-dir", dir,
		"--jetstream=false", "--server-name", "gw-hub-e2e", "--leaf-port", "-1")
	pf, _ := p.waitPorts(dir)
	leafURL := loopbackURL(t, pf.LeafNodes)
	if leafURL.Scheme != "nats-leaf" {
		t.Fatalf("ports file leafnodes %v", pf.LeafNodes)
	}
	leafSrv := leaftest.StartHub(t, leaftest.HubOptions{Name: "ns-leaf-e2e",
		Leaf: fmt.Sprintf(`remotes: [{url: %q}]`, leafURL.String())})
	u := connectUplink(t, p, dir, leafSrv)
	u.pubSubBothWays()
	l := waitLeafz(t, u.mon, func(l leafzEntry) bool { return l.Name == "ns-leaf-e2e" })
	if l.IsSpoke || l.Account != "$G" || l.IP != "127.0.0.1" {
		t.Fatalf("/leafz entry: %+v", l)
	}
	u.stop()
}
