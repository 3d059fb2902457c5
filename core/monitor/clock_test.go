package monitor

import (
	"net/http"
	"testing"
	"time"
)

// clockProvider adds a ClockProvider reporting a fixed status.
type clockProvider struct {
	*fakeProvider
	info ClockInfo
}

func (c *clockProvider) ClockStatus() *ClockInfo { info := c.info; return &info }

func TestClockReported(t *testing.T) {
	lkg := time.Date(2026, time.November, 1, 0, 0, 0, 0, time.UTC)
	p := &clockProvider{fakeProvider: newFixture(), info: ClockInfo{
		Now: time.Unix(42, 0).UTC(), LastKnownGood: lkg, BootID: "b1", MonoSeconds: 42,
	}}
	h := newTestHandler(t, p)

	// Untrusted is a status, not a failure: /healthz stays 200 "ok".
	res, body := get(t, h, "/healthz")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("/healthz status %d: %s", res.StatusCode, body)
	}
	hz := decode(t, body)
	if hz["status"] != "ok" {
		t.Fatalf("/healthz %s", body)
	}
	c := object(t, hz, "clock")
	if c["trusted"] != false || c["last_known_good"] != "2026-11-01T00:00:00Z" || c["boot_id"] != "b1" {
		t.Fatalf("/healthz clock %v", c)
	}
	requireNoKeys(t, "untrusted clock", c, "source", "hub_time", "offset_seconds")

	p.info.Trusted, p.info.Source = true, "hub"
	p.info.HubTime = lkg.Add(time.Hour)
	if c := getStruct[Healthz](t, h, "/healthz?details=true").Clock; c == nil || !c.Trusted || c.Source != "hub" || !c.HubTime.Equal(lkg.Add(time.Hour)) {
		t.Fatalf("/healthz?details clock %+v", c)
	}
	if c := getStruct[Varz](t, h, "/varz").Clock; c == nil || !c.Trusted {
		t.Fatalf("/varz clock %+v", c)
	}
	if c := getStruct[Uplinkz](t, h, "/uplinkz").Clock; c == nil || c.BootID != "b1" {
		t.Fatalf("/uplinkz clock %+v", c)
	}
	// Without a ClockProvider there is no clock field.
	requireNoKeys(t, "/healthz without a clock", getJSON(t, newTestHandler(t, newFixture()), "/healthz"), "clock")
	requireNoKeys(t, "/varz without a clock", getJSON(t, newTestHandler(t, newFixture()), "/varz"), "clock")
}
