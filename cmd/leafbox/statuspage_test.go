//go:build unix

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// writeStatusPageConfig writes the config of a gateway named name whose
// uplink "tel" forwards telemetry.> through the remote at leafURL to the
// hub stream SITE, capped at maxRate bytes per second so that a backlog
// drains over a few seconds, and returns its path.
func writeStatusPageConfig(t *testing.T, dir, name, leafURL string, maxRate int) string {
	t.Helper()
	cfg := filepath.Join(dir, "leafbox.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `server_name: %q
listen: 127.0.0.1
port: -1
http: 127.0.0.1
http_port: -1
jetstream:
  store_dir: %q
leafnodes:
  remotes:
    - url: %q
uplinks:
  - name: tel
    subjects: [telemetry.>]
    hub_subject_prefix: site1.
    stream: SITE
    hub_domain: hub
    max_rate: %d
    drain_jitter: 0s
`, name, filepath.Join(dir, "state"), leafURL, maxRate), 0o600))
	return cfg
}

// The page's state as the test reads it, each one JavaScript expression.
const (
	pageOverall   = `document.getElementById("overall").dataset.state`
	pageLink      = `(document.querySelector('[data-link="1"]') || {dataset: {}}).dataset.state || ""`
	pageUplink    = `(function(){ const u = document.querySelector('[data-uplink="tel"]'); return u ? u.dataset.linkState + " " + u.dataset.backlog + " " + u.dataset.trend : ""; })()`
	pageLinkBadge = `(document.querySelector('[data-link="1"] .badge') || {}).textContent || ""`
)

// uplinkView splits a pageUplink value: link state, backlog, trend.
func uplinkView(s string) (link string, backlog int, trend string) {
	f := strings.Fields(s)
	if len(f) != 3 {
		return "", -1, ""
	}
	n, err := strconv.Atoi(f[1])
	if err != nil {
		return "", -1, ""
	}
	return f[0], n, f[2]
}

// TestStatusPageInBrowser runs the real binary with an uplink to a real
// nats-server hub through a fault proxy, opens the status page in
// headless Chromium and follows one page as it live-updates: the link up,
// the link down after the proxy cuts it with the backlog growing while
// messages are published, then the backlog draining after the link is
// restored, until it is empty, and NO CONTACT once the gateway stops. A
// first load with JavaScript off names the box and lists the endpoints.
// Screenshots of each state are saved in the test's temporary directory
// (and copied to $LEAFBOX_SCREENSHOTS when set).
func TestStatusPageInBrowser(t *testing.T) {
	began := time.Now()
	ctx := testContext(t)
	hub, _, _ := startJSHub(t, ctx, leaftest.HubOptions{Name: "hub-status", Leaf: "no_advertise: true"}, jetstream.StreamConfig{
		Name: "SITE", Subjects: []string{"site1.>"}, Storage: jetstream.FileStorage,
	})
	proxy := leaftest.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", hub.LeafPort))
	dir := t.TempDir()
	// The name carries markup: the page must show it as text.
	const name = "gw-<b>7</b>&amp;"
	const maxRate = 32 << 10
	cfg := writeStatusPageConfig(t, dir, name, proxy.LeafURL(), maxRate)
	p, gw := startJS(t, cfg, dir)
	pf, _ := p.waitPorts(dir)
	mon := loopbackURL(t, pf.Monitoring).String()
	shots := t.TempDir()

	b := startBrowser(t)
	b.viewport(412, 900, true) // a phone
	// Without JavaScript the page still names the box and lists every
	// endpoint, at the bottom.
	b.call(b.session, "Emulation.setScriptExecutionDisabled", map[string]any{"value": true}, nil)
	b.navigate(mon + "/")
	if n := b.eval(`String(document.querySelectorAll("footer #endpoints a").length)`); n == "0" || n == "" {
		t.Fatalf("no endpoint links without JavaScript")
	}
	if got := b.eval(`document.querySelector('#endpoints a[href="./varz"]') ? "yes" : "no"`); got != "yes" {
		t.Fatalf("no link to ./varz without JavaScript")
	}
	if got := b.eval(`document.getElementById("name").textContent`); got != name {
		t.Fatalf("server name rendered as %q without JavaScript, want the literal %q", got, name)
	}
	if n := b.eval(`String(document.querySelectorAll("h1 b").length)`); n != "0" {
		t.Fatalf("the server name's markup became %s elements without JavaScript", n)
	}
	// A <noscript> holds elements only when scripts are off.
	if got := b.eval(`document.querySelector("noscript p.note") ? "shown" : "absent"`); got != "shown" {
		t.Fatalf("the JavaScript-off note is %s", got)
	}
	if got := b.eval(`document.getElementById("live").hidden ? "hidden" : "shown"`); got != "hidden" {
		t.Fatalf("the live sections show without JavaScript")
	}
	b.screenshot(shots, "statuspage-nojs-phone.png")
	b.call(b.session, "Emulation.setScriptExecutionDisabled", map[string]any{"value": false}, nil)

	b.navigate(mon + "/?refresh=0.25")
	started := time.Now()

	// Up: the link, the uplink, and the box's identity shown as text.
	b.waitFor("the link up", pageLink, "up")
	b.waitUntil("the uplink connected", pageUplink, func(s string) bool { l, _, _ := uplinkView(s); return l == "connected" })
	if got := b.eval(pageLinkBadge); got != "UP" {
		t.Fatalf("link badge %q, want UP", got)
	}
	if got := b.eval(`document.getElementById("name").textContent`); got != name {
		t.Fatalf("server name shown as %q, want the literal %q", got, name)
	}
	if n := b.eval(`String(document.querySelectorAll("#name *, h1 b").length)`); n != "0" {
		t.Fatalf("the server name's markup became %s elements", n)
	}
	if got := b.eval(`document.getElementById("bridges-body").textContent`); got != "No bridges configured." {
		t.Fatalf("bridges section: %q", got)
	}
	for _, want := range []string{"Hub link 1", "Round trip", "Uplink tel", "UP TO DATE", "TRUSTED", "Headroom", "Disk", "Streams", "Endpoints"} {
		if text := b.eval(`document.body.textContent`); !strings.Contains(text, want) {
			t.Fatalf("page lacks %q:\n%s", want, text)
		}
	}
	b.requireNoSidewaysScroll()
	b.screenshot(shots, "statuspage-up-phone.png")
	b.viewport(1280, 900, false) // a laptop
	b.screenshot(shots, "statuspage-up-laptop.png")
	b.viewport(412, 900, true)
	upAt := time.Now()

	// Down: cut the link; publish while the page shows the backlog grow.
	proxy.Cut()
	b.waitFor("the link down", pageLink, "down")
	if got := b.eval(pageLinkBadge); got != "DOWN" {
		t.Fatalf("link badge %q, want DOWN", got)
	}
	nc, err := nats.Connect(gw.String(), nats.Timeout(waitTimeout))
	require.NoError(t, err)
	defer nc.Close()
	payload := []byte(strings.Repeat("x", 200))
	published := 0
	publish := func(n int) {
		t.Helper()
		for range n {
			require.NoError(t, nc.Publish("telemetry.temp", payload))
			published++
		}
		require.NoError(t, nc.FlushTimeout(waitTimeout))
	}
	// The page polls every 250ms: batches spread over a few polls show
	// the backlog growing, and leave enough to drain over a second or
	// more at maxRate.
	deadline := time.Now().Add(waitTimeout)
	for {
		publish(40)
		link, backlog, trend := uplinkView(b.eval(pageUplink))
		if link != "connected" && trend == "growing" && backlog >= 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("page never showed a growing backlog of 200 with the link down: %q after %d published", b.eval(pageUplink), published)
		}
		b.waitUntil("the page to show the new backlog", pageUplink, func(s string) bool { _, n, _ := uplinkView(s); return n != backlog })
	}
	b.waitFor("the overall state to ask for attention", pageOverall, "warn")
	if text := b.eval(`document.body.innerText`); !strings.Contains(text, "LINK DOWN: STORING") || !strings.Contains(text, "Hub link 1 is down") {
		t.Fatalf("page with the link down:\n%s", text)
	}
	b.requireNoSidewaysScroll()
	b.screenshot(shots, "statuspage-down-phone.png")
	b.viewport(1280, 900, false)
	b.screenshot(shots, "statuspage-down-laptop.png")
	b.viewport(412, 900, true)
	downAt := time.Now()

	// Draining: restore the link; the rate cap spreads the drain over
	// several polls, which show the backlog shrinking, then empty.
	proxy.Restore()
	b.waitFor("the link up again", pageLink, "up")
	b.waitUntil("the backlog draining", pageUplink, func(s string) bool {
		l, n, trend := uplinkView(s)
		return l == "connected" && trend == "draining" && n > 0
	})
	b.screenshot(shots, "statuspage-draining-phone.png")
	b.waitUntil("the backlog empty", pageUplink, func(s string) bool {
		l, n, trend := uplinkView(s)
		return l == "connected" && n == 0 && trend == "empty"
	})
	b.waitFor("all ok", pageOverall, "ok")
	b.screenshot(shots, "statuspage-drained-phone.png")
	drainedAt := time.Now()

	if errs := b.pageErrors(); len(errs) > 0 {
		t.Fatalf("the page reported errors:\n%s", strings.Join(errs, "\n"))
	}

	// The box stops answering: the page says so and keeps the last values.
	stopJS(t, p)
	b.waitFor("no contact", pageOverall, "nocontact")
	if got := b.eval(`document.getElementById("overall").textContent`); got != "NO CONTACT" {
		t.Fatalf("overall badge %q without the box, want NO CONTACT", got)
	}
	if got := b.eval(`document.querySelector('[data-uplink="tel"]') ? "kept" : "gone"`); got != "kept" {
		t.Fatalf("the last values are %s without the box", got)
	}
	b.screenshot(shots, "statuspage-nocontact-phone.png")

	t.Logf("published %d messages; hub, gateway and browser ready after %v; page up after %v, down state %v, drained %v; whole test %v; screenshots in %s",
		published, started.Sub(began).Round(time.Millisecond), upAt.Sub(started).Round(time.Millisecond), downAt.Sub(upAt).Round(time.Millisecond),
		drainedAt.Sub(downAt).Round(time.Millisecond), time.Since(began).Round(time.Millisecond), shots)
}
