//go:build unix

package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/monitor"
)

// The markup the fixture hides in names and errors: the page must show it
// as text and never build an element from it.
const hostile = `<img src=x onerror=alert(1)>`

// sectionsProvider is a monitor.Provider with every optional part a page
// section shows: two remotes (one down), an attached leaf, uplinks with
// drops, dead letters, a budget and a long error, a downlink, a stream, an
// untrusted clock, a failing health check and degraded conditions.
type sectionsProvider struct{ now time.Time }

func (p sectionsProvider) ServerID() string { return "NSECTIONS" }
func (p sectionsProvider) Varz() *monitor.Varz {
	return &monitor.Varz{
		ID: "NSECTIONS", Name: "site-" + hostile, Version: "2.11.0", LeafboxVersion: "1.2.3",
		GitCommit: "abc123", BuildDate: "2026-11-30T10:00:00Z", Start: p.now.Add(-50 * time.Hour),
		Connections: 3, Leafs: 2, PublicKey: "NPUBLICKEY",
		LeafNode: monitor.LeafNodeVarz{Remotes: []monitor.RemoteLeafVarz{
			{LocalAccount: "$G", URLs: []string{"nats-leaf://hub-a:7422", "nats-leaf://hub-b:7422"}},
			{LocalAccount: "SENSORS", URLs: []string{"nats-leaf://" + hostile + ":7422"}},
		}},
		JetStream: monitor.JetStreamVarz{
			Config: &monitor.JetStreamConfig{MaxStore: 1 << 30, MaxMemory: 1 << 28},
			Stats:  &monitor.JetStreamStats{Store: 900 << 20},
		},
		System: &monitor.SystemVarz{MemTotal: 512 << 20, MemAvailable: 20 << 20,
			Disk: &monitor.DiskVarz{Path: "/var/lib/leafbox", Total: 8 << 30, Available: 40 << 20}},
		GoVersion: "go1.26", Mem: 90 << 20, MemLimit: 100 << 20, Cores: 4, CPU: 12.5,
	}
}
func (sectionsProvider) Connections(monitor.ConnState, bool) []monitor.ConnSnapshot { return nil }
func (sectionsProvider) Subscriptions(string) []monitor.SubDetail                   { return nil }
func (sectionsProvider) SublistStats(string) monitor.SublistStats                   { return monitor.SublistStats{} }
func (sectionsProvider) Accounts() []string                                         { return []string{"$G"} }
func (sectionsProvider) Ready() error                                               { return nil }

func (sectionsProvider) Leafs(bool) []monitor.LeafInfo {
	return []monitor.LeafInfo{
		{ID: 1, Name: "hub-a", IsSpoke: true, IP: "10.0.0.1", Port: 7422, RTT: "41.7ms", InMsgs: 1234567, OutMsgs: 89},
		{ID: 9, Name: "pump-" + hostile, IP: "192.168.1.20", Port: 51000, RTT: "820µs"},
	}
}

func (p sectionsProvider) Uplinks() []monitor.UplinkInfo {
	at := p.now.Add(-90 * time.Second)
	return []monitor.UplinkInfo{
		{Name: "tel", State: "forwarding", LinkState: "connected", BacklogMsgs: 15000, BacklogBytes: 3 << 20,
			OldestAgeSeconds: 4000, RateMsgs: 250, RateBytes: 50 << 10, ETASeconds: 60, Acked: 99, AckedBytes: 1 << 20,
			Dropped: map[string]uint64{"max_age": 12, "disk_low": 3}, DeadLetterMsgs: 2, DeadLettered: 2,
			LastRejection: "no stream for " + hostile, MaxRate: 64 << 10, Waiting: "rate"},
		{Name: hostile, State: "backoff", LinkState: "connecting", BacklogMsgs: 7, BacklogBytes: 900,
			OldestAgeSeconds: 30, LastError: "dial: " + hostile, LastErrorAt: &at, DailyBudget: 10 << 20,
			BudgetUsed: 10 << 20, Waiting: "budget"},
	}
}

func (sectionsProvider) UplinkLimits() *monitor.UplinkLimits {
	return &monitor.UplinkLimits{Day: "2026-12-01", DailyBudget: 100 << 20, BudgetUsed: 100 << 20, Exhausted: true}
}

func (sectionsProvider) Downlinks() []monitor.DownlinkInfo {
	return []monitor.DownlinkInfo{
		{Name: "cmds", State: "pulling", LinkState: "connected", Stream: "CMDS", Durable: "site1", Delivered: 40, Pending: 3, Failed: 1,
			LastError: "no responders on " + hostile},
	}
}

func (p sectionsProvider) ClockStatus() *monitor.ClockInfo {
	return &monitor.ClockInfo{Trusted: false, Now: p.now, LastKnownGood: p.now.Add(-time.Hour), Rejected: "hub", BootID: "b1"}
}

func (sectionsProvider) Jsz(monitor.JszOptions) (*monitor.Jsz, error) {
	return &monitor.Jsz{
		Config: monitor.JetStreamConfig{MaxStore: 1 << 30}, Streams: 1, Messages: 5000, Bytes: 900 << 20,
		JetStreamStats: monitor.JetStreamStats{Store: 900 << 20},
		AccountDetails: []*monitor.AccountDetail{{Name: "$G", Streams: []monitor.StreamDetail{{
			Name:  "EVENTS-" + hostile,
			State: map[string]any{"messages": 5000, "bytes": 900 << 20, "consumer_count": 2},
		}}}},
	}, nil
}

func (sectionsProvider) CheckHealth(monitor.HealthzOptions) (int, []monitor.HealthzError) {
	return 0, []monitor.HealthzError{{Type: monitor.HealthzErrorStore, Error: "store directory is not writable: " + hostile}}
}

func (sectionsProvider) CheckDegraded(monitor.HealthzOptions) ([]monitor.HealthzError, bool) {
	return []monitor.HealthzError{{Type: monitor.HealthzErrorUplink, Uplink: "tel", Error: "uplink tel: 2 messages dead-lettered"}}, false
}

// TestStatusPageSections renders the page over a provider that fills
// every section, with /bridgez answered by a stand-in for the bridges to
// come, and checks each section's words, that values carrying markup stay
// text, and that the script reports no error.
func TestStatusPageSections(t *testing.T) {
	mux := http.NewServeMux()
	mux.Handle("/", monitor.NewHandler(sectionsProvider{now: time.Now()}))
	mux.HandleFunc("/bridgez", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"bridges":[{"name":"mqtt-` + strings.ReplaceAll(hostile, `"`, `\"`) +
			`","state":"connected","kind":"mqtt","msgs_in":1500,"devices":[{"name":"meter-1","state":"online"},"pump-2"]},` +
			`{"name":"serial0","state":"reconnecting","kind":"serial"}]}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	b := startBrowser(t)
	b.viewport(1280, 900, false)
	b.navigate(srv.URL + "/?refresh=0.5")
	b.waitFor("the overall state", pageOverall, "bad")
	text := b.waitUntil("the bridges", `document.body.innerText`, func(s string) bool { return strings.Contains(s, "serial0") })
	for _, want := range []string{
		"PROBLEM", "Problem: Hub link 2 (account SENSORS) is down", "store directory is not writable: " + hostile,
		"uplink tel: 2 messages dead-lettered", "Clock not trusted",
		"Hub link 1", "UP", "hub-a", "10.0.0.1:7422", "42 ms", "nats-leaf://hub-a:7422 (+1 more)", "in 1,234,567 · out 89",
		"DOWN", "nats-leaf://" + hostile + ":7422", "Leaf nodes attached here", "pump-" + hostile + " from 192.168.1.20:51000 · round trip 0.8 ms",
		"Uplink tel", "SENDING AT RATE CAP", "15,000", "3.0 MiB", "1 h 6 min", "250 msg/s · 50 KiB/s", "1 min 0 s",
		"max age: 12", "disk low: 3", "2 held", "no stream for " + hostile,
		"Uplink " + hostile, "LINK DOWN: STORING", "once the link is back",
		"10 MiB of 10 MiB used today", "BUDGET USED UP",
		"Downlink cmds", "PULLING", "CMDS (consumer site1)", "no responders on " + hostile,
		"Bridge mqtt-" + hostile, "CONNECTED", "meter-1: online", "pump-2", "Bridge serial0", "RECONNECTING",
		"EVENTS-" + hostile, "5,000", "900 MiB",
		"NOT TRUSTED", "nobody yet", "TOO LITTLE", "90 MiB of 100 MiB limit (90%)", "20 MiB free of 512 MiB",
		"40 MiB free of 8.0 GiB", "Disk nearly full", "leafbox 1.2.3 · NATS 2.11.0", "2 d 2 h (since ", "1 stream · 5,000 messages · 900 MiB on disk of 1.0 GiB allowed",
		"40 MiB free of 8.0 GiB (99% used)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The dial error is 90 s old when the provider is made; the page
	// counts its age on from there, so a slow machine sees a later
	// minute.
	if !strings.Contains(text, "dial: "+hostile+" (1 min ") && !strings.Contains(text, "dial: "+hostile+" (2 min ") {
		t.Errorf("page lacks the dial error with its age (1 or 2 min)")
	}
	if n := b.eval(`String(document.querySelectorAll("img").length)`); n != "0" {
		t.Errorf("markup from the data became %s img elements", n)
	}
	if got := b.eval(`document.querySelector('[data-uplink="tel"] a').getAttribute("href")`); got != "uplinkz/deadletter?uplink=tel" {
		t.Errorf("dead letters link %q", got)
	}
	b.screenshot(t.TempDir(), "statuspage-sections-laptop.png")
	b.viewport(412, 900, true)
	b.requireNoSidewaysScroll()
	b.screenshot(t.TempDir(), "statuspage-sections-phone.png")
	if errs := b.pageErrors(); len(errs) > 0 {
		t.Fatalf("the page reported errors:\n%s", strings.Join(errs, "\n"))
	}
	if t.Failed() {
		t.Logf("page text:\n%s", text)
	}
}
