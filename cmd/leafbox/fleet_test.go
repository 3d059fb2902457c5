//go:build unix

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/tooltest"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// The README's fleet steps, as written: leafbox fleet bundle on the
// hub's side, nats request to the gateway's subject, the answer, /varz,
// and a restart that keeps the applied configuration.
func TestFleetBundleWithNatsCLI(t *testing.T) {
	hub := leaftest.StartHub(t, leaftest.HubOptions{})
	dir := t.TempDir()
	seed := filepath.Join(dir, "operator.nk")
	op := writeOperator(t, seed)
	base := fmt.Sprintf("listen: 127.0.0.1\nport: -1\nhttp_port: -1\njetstream: {store_dir: %q}\nleafnodes: {remotes: [{url: %q}]}\nfleet: {trusted_keys: [%s], groups: [north]}\n",
		filepath.Join(dir, "store"), hub.LeafURL(), op)
	cfg := filepath.Join(dir, "leafbox.yaml")
	if err := os.WriteFile(cfg, []byte(base), 0o644); err != nil {
		t.Fatal(err)
	}
	portsDir := t.TempDir()
	p := start(t, "run", "--config", cfg, "--ports-file-dir", portsDir)
	pf, _ := p.waitPorts(portsDir)
	mon := loopbackURL(t, pf.Monitoring).String()
	varz := func(mon string) map[string]any {
		var v map[string]any
		if err := json.Unmarshal([]byte(get(t, mon+"/varz")), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	gw, _ := varz(mon)["public_key"].(string)
	if !strings.HasPrefix(gw, "N") {
		t.Fatalf("/varz public_key %q", gw)
	}

	site := filepath.Join(dir, "site.yaml")
	if err := os.WriteFile(site, []byte(base+"max_connections: 55\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "bundle.json")
	mk := exec.Command(binary, "fleet", "bundle", "--seed", seed, "--gateway", gw, "--serial", "7", "-o", bundle, site)
	if out, err := mk.CombinedOutput(); err != nil || !strings.Contains(string(out), "wrote "+bundle+": serial 7 for gateway "+gw) {
		t.Fatalf("fleet bundle: %v\n%s", err, out)
	}
	// nats request SUBJECT --force-stdin < bundle.json, retried while the
	// hub has not learnt the gateway's interest yet (no responders).
	send := func(subj string) string {
		deadline := time.Now().Add(waitTimeout)
		for {
			in, err := os.Open(bundle)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(tooltest.NatsCLI(t), "--server", hub.ClientURL(), "--no-context", "request", subj, "--force-stdin", "--raw", "--timeout", "20s")
			cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
			cmd.Stdin = in
			out, err := cmd.CombinedOutput()
			in.Close()
			if err == nil {
				return string(out)
			}
			if !strings.Contains(string(out), "no responders") || time.Now().After(deadline) {
				t.Fatalf("nats request: %v\n%s", err, out)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	answer := send("$LEAFBOX.fleet." + gw + ".config")
	if !strings.Contains(answer, `"status":"applied"`) || !strings.Contains(answer, `"applied_serial":7`) {
		t.Fatalf("answer: %s", answer)
	}
	v := varz(mon)
	conf, _ := v["config"].(map[string]any)
	if v["max_connections"] != float64(55) || conf["source"] != "fleet" || conf["fleet_serial"] != float64(7) || v["config_digest"] != conf["hash"] {
		t.Fatalf("/varz after the bundle: max_connections %v, config %v, config_digest %v", v["max_connections"], conf, v["config_digest"])
	}
	// The same bundle again is a replay.
	if answer := send("$LEAFBOX.fleet." + gw + ".config"); !strings.Contains(answer, "replay: serial 7 is not newer than 7") {
		t.Fatalf("replay answer: %s", answer)
	}

	// A restart runs on the applied bundle, not on the file.
	p.signal(syscall.SIGTERM)
	if code := p.wait(); code != 0 {
		t.Fatalf("exit %d; log:\n%s", code, p.log())
	}
	p = start(t, "run", "--config", cfg, "--ports-file-dir", portsDir)
	pf, _ = p.waitPorts(portsDir)
	mon = loopbackURL(t, pf.Monitoring).String()
	p.waitLog("fleet: running on the applied bundle")
	v = varz(mon)
	conf, _ = v["config"].(map[string]any)
	if v["max_connections"] != float64(55) || conf["source"] != "fleet" {
		t.Fatalf("/varz after the restart: max_connections %v, config %v", v["max_connections"], conf)
	}
}
