//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"go.yaml.in/yaml/v3"
)

// Checks of the shipped deploy files that need no running hub: every
// nats-server configuration passes nats-server's own configuration test,
// and deploy/hub/compose.yaml names the files and ports of deploy/hub.

// includeRE matches a nats-server include directive and its file.
var includeRE = regexp.MustCompile(`(?m)^\s*include\s+(\S+)`)

// shippedConfs returns the nats-server configuration files under deploy,
// except the resolver.conf that issue-gateway.sh writes (git ignores it
// in deploy/hub-jwt).
func shippedConfs(t *testing.T) []string {
	t.Helper()
	var confs []string
	err := filepath.WalkDir(deployDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".conf") && d.Name() != "resolver.conf" {
			confs = append(confs, path)
		}
		return nil
	})
	require.NoError(t, err)
	return confs
}

// TestDeployConfsPassConfigTest runs `nats-server -t -c FILE` on every
// shipped .conf, as it is, from a copy of its folder. The one file a
// shipped configuration includes that is not shipped, deploy/hub-jwt's
// resolver.conf, is made by issue-gateway.sh into the copy, as the README
// says; any other missing include fails the test.
func TestDeployConfsPassConfigTest(t *testing.T) {
	confs := shippedConfs(t)
	for _, want := range []string{"hub/hub-1.conf", "hub/hub-2.conf", "hub/hub-3.conf", "hub/accounts.conf",
		"hub-jwt/hub-1.conf", "hub-jwt/hub-2.conf", "hub-jwt/hub-3.conf"} {
		if !slices.Contains(confs, filepath.Join(deployDir, want)) {
			t.Fatalf("deploy/%s missing among the shipped configurations %v", want, confs)
		}
	}
	var resolver string           // made once, for every file that includes it
	copies := map[string]string{} // shipped folder → its copy
	parent := t
	for _, conf := range confs {
		rel, err := filepath.Rel(deployDir, conf)
		require.NoError(t, err)
		t.Run(rel, func(t *testing.T) {
			src := filepath.Dir(conf)
			dst, ok := copies[src]
			if !ok {
				dst = parent.TempDir()
				entries, err := os.ReadDir(src)
				require.NoError(t, err)
				for _, e := range entries {
					if e.Type().IsRegular() && e.Name() != "resolver.conf" {
						copyFile(t, filepath.Join(src, e.Name()), filepath.Join(dst, e.Name()))
					}
				}
				copies[src] = dst
			}
			text := readDeploy(t, rel)
			for _, m := range includeRE.FindAllStringSubmatch(text, -1) {
				inc := filepath.Join(dst, m[1])
				if _, err := os.Stat(inc); err == nil {
					continue
				}
				if filepath.Base(m[1]) != "resolver.conf" {
					t.Fatalf("%s includes %s, which is not shipped beside it", rel, m[1])
				}
				if resolver == "" {
					secrets := filepath.Join(parent.TempDir(), "secrets")
					runIssueGateway(t, secrets, "site1", "gateway-01")
					resolver = filepath.Join(secrets, "resolver.conf")
				}
				copyFile(t, resolver, inc)
			}
			requireConfigTest(t, filepath.Join(dst, filepath.Base(conf)))
		})
	}
}

// composeFile is the part of a compose file the test reads.
type composeFile struct {
	Services map[string]struct {
		Image       string   `yaml:"image"`
		Command     []string `yaml:"command"`
		NetworkMode string   `yaml:"network_mode"`
		Volumes     []string `yaml:"volumes"`
		Ports       []string `yaml:"ports"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
	Volumes map[string]any `yaml:"volumes"`
}

// hubConf is what a hub node file of deploy/hub sets, as the compose
// test compares it.
type hubConf struct {
	name        string
	listenPorts []int // ports bound on 0.0.0.0: clients and leafnodes
	httpPort    int   // monitoring, on 127.0.0.1
	storeDir    string
	includes    []string
}

var (
	confNameRE   = regexp.MustCompile(`(?m)^server_name:\s*(\S+)`)
	confListenRE = regexp.MustCompile(`(?m)^\s*listen:\s*0\.0\.0\.0:(\d+)`)
	confHTTPRE   = regexp.MustCompile(`(?m)^http:\s*127\.0\.0\.1:(\d+)`)
	confStoreRE  = regexp.MustCompile(`(?m)^\s*store_dir:\s*"([^"]+)"`)
	confRouteRE  = regexp.MustCompile(`nats-route://([^:\s]+):`)
)

// parseHubConf reads deploy/hub/<file>.
func parseHubConf(t *testing.T, file string) hubConf {
	t.Helper()
	text := readDeploy(t, filepath.Join("hub", file))
	var c hubConf
	if m := confNameRE.FindStringSubmatch(text); m != nil {
		c.name = m[1]
	}
	for _, m := range confListenRE.FindAllStringSubmatch(text, -1) {
		p, _ := strconv.Atoi(m[1])
		c.listenPorts = append(c.listenPorts, p)
	}
	if m := confHTTPRE.FindStringSubmatch(text); m != nil {
		c.httpPort, _ = strconv.Atoi(m[1])
	}
	if m := confStoreRE.FindStringSubmatch(text); m != nil {
		c.storeDir = m[1]
	}
	for _, m := range includeRE.FindAllStringSubmatch(text, -1) {
		c.includes = append(c.includes, filepath.Clean(m[1]))
	}
	for _, m := range confRouteRE.FindAllStringSubmatch(text, -1) {
		if m[1] != "127.0.0.1" {
			t.Fatalf("deploy/hub/%s routes to %s; the compose file assumes loopback routes", file, m[1])
		}
	}
	if c.name == "" || len(c.listenPorts) != 2 || c.httpPort == 0 || c.storeDir == "" {
		t.Fatalf("deploy/hub/%s: cannot read its name, client and leafnode ports, monitoring port and store_dir: %+v", file, c)
	}
	return c
}

// TestDeployComposeMatchesHub checks deploy/hub/compose.yaml without
// Docker: it is well-formed YAML; it runs one service per hub-N.conf,
// named after the node, on the pinned nats image; each service mounts
// its node file and the files that file includes from deploy/hub (which
// exist) beside each other, and a volume at the node's store_dir; the
// nodes share one network namespace, since their routes are on
// 127.0.0.1; the published ports are exactly the nodes' client and
// leafnode ports, each to itself; and each health check reads its own
// node's monitoring port.
func TestDeployComposeMatchesHub(t *testing.T) {
	var cf composeFile
	if err := yaml.Unmarshal([]byte(readDeploy(t, "hub/compose.yaml")), &cf); err != nil {
		t.Fatalf("deploy/hub/compose.yaml: %v", err)
	}
	nodeFiles, err := filepath.Glob(filepath.Join(deployDir, "hub", "hub-*.conf"))
	require.NoError(t, err)
	if len(nodeFiles) != 3 || len(cf.Services) != len(nodeFiles) {
		t.Fatalf("%d services in compose.yaml for the node files %v", len(cf.Services), nodeFiles)
	}
	var wantPorts, gotPorts []string
	var shared string // the service whose network namespace the others join
	for _, nodeFile := range nodeFiles {
		file := filepath.Base(nodeFile)
		c := parseHubConf(t, file)
		svc, ok := cf.Services[c.name]
		if !ok {
			t.Fatalf("no service %s (server_name of %s) in compose.yaml", c.name, file)
		}
		if svc.Image != "nats:2.15.2-alpine" {
			t.Fatalf("service %s: image %q, want the pinned nats:2.15.2-alpine", c.name, svc.Image)
		}
		target := "/etc/nats/" + file
		if !slices.Equal(svc.Command, []string{"-c", target}) {
			t.Fatalf("service %s: command %v, want [-c %s]", c.name, svc.Command, target)
		}
		mounts := map[string]string{} // container path → host path
		for _, v := range svc.Volumes {
			parts := strings.Split(v, ":")
			if len(parts) < 2 {
				t.Fatalf("service %s: volume %q", c.name, v)
			}
			mounts[parts[1]] = parts[0]
			if strings.HasPrefix(parts[0], "./") {
				if _, err := os.Stat(filepath.Join(deployDir, "hub", parts[0])); err != nil {
					t.Fatalf("service %s mounts %s: %v", c.name, parts[0], err)
				}
				if len(parts) != 3 || parts[2] != "ro" {
					t.Fatalf("service %s: configuration %s not mounted read-only", c.name, parts[0])
				}
			} else if _, ok := cf.Volumes[parts[0]]; !ok {
				t.Fatalf("service %s: volume %s is not declared under volumes", c.name, parts[0])
			}
		}
		if mounts[target] != "./"+file {
			t.Fatalf("service %s: %s is %q, want ./%s", c.name, target, mounts[target], file)
		}
		for _, inc := range c.includes {
			if mounts[filepath.Join("/etc/nats", inc)] != "./"+inc {
				t.Fatalf("service %s: %s includes %s, not mounted beside it", c.name, file, inc)
			}
		}
		if src, ok := mounts[c.storeDir]; !ok || strings.HasPrefix(src, ".") {
			t.Fatalf("service %s: no volume at its store_dir %s", c.name, c.storeDir)
		}
		for _, p := range c.listenPorts {
			wantPorts = append(wantPorts, fmt.Sprintf("%d:%d", p, p))
		}
		gotPorts = append(gotPorts, svc.Ports...)
		if svc.NetworkMode == "" {
			if shared != "" {
				t.Fatalf("services %s and %s both have their own network; the loopback routes need one", shared, c.name)
			}
			shared = c.name
		} else if len(svc.Ports) != 0 {
			t.Fatalf("service %s joins %s but publishes ports itself", c.name, svc.NetworkMode)
		}
		health := fmt.Sprintf("http://127.0.0.1:%d/healthz", c.httpPort)
		if !slices.Contains(svc.Healthcheck.Test, health) {
			t.Fatalf("service %s: health check %v does not read %s", c.name, svc.Healthcheck.Test, health)
		}
	}
	for name, svc := range cf.Services {
		if svc.NetworkMode != "" && svc.NetworkMode != "service:"+shared {
			t.Fatalf("service %s: network_mode %q, want service:%s", name, svc.NetworkMode, shared)
		}
	}
	slices.Sort(wantPorts)
	slices.Sort(gotPorts)
	if !slices.Equal(wantPorts, gotPorts) {
		t.Fatalf("compose.yaml publishes %v; the node files listen on %v", gotPorts, wantPorts)
	}
}
