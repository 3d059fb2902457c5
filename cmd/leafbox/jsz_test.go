package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestJetStreamMonitoring runs the binary with JetStream, stores messages
// through the official client, and reads them back from /jsz, /varz and
// /metrics.
func TestJetStreamMonitoring(t *testing.T) {
	portsDir := t.TempDir()
	p := start(t, "run", "--addr", "127.0.0.1", "--port", "-1", "--http-port", "-1", "--store-dir", t.TempDir(), "--ports-file-dir", portsDir)
	pf, _ := p.waitPorts(portsDir)
	nc, err := nats.Connect(loopbackURL(t, pf.Nats).String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	// Stream advisories have a listener, consumer advisories none.
	adv, err := nc.SubscribeSync("$JS.EVENT.ADVISORY.STREAM.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TELEMETRY", Subjects: []string{"telemetry.>"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if _, err := js.Publish(ctx, "telemetry.temp", []byte("21.5")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "dash"}); err != nil {
		t.Fatal(err)
	}
	if m, err := adv.NextMsg(waitTimeout); err != nil || m.Subject != "$JS.EVENT.ADVISORY.STREAM.CREATED.TELEMETRY" {
		t.Fatalf("stream advisory: %v %v", m, err)
	}

	mon := loopbackURL(t, pf.Monitoring).String()
	var jsz struct {
		Disabled       bool   `json:"disabled"`
		Streams        int    `json:"streams"`
		Consumers      int    `json:"consumers"`
		Messages       uint64 `json:"messages"`
		AccountDetails []struct {
			Name    string `json:"name"`
			Streams []struct {
				Name  string `json:"name"`
				State struct {
					Messages uint64 `json:"messages"`
				} `json:"state"`
				Consumers []struct {
					Name string `json:"name"`
				} `json:"consumer_detail"`
			} `json:"stream_detail"`
		} `json:"account_details"`
	}
	if err := json.Unmarshal([]byte(get(t, mon+"/jsz?consumers=true")), &jsz); err != nil {
		t.Fatal(err)
	}
	if jsz.Disabled || jsz.Streams != 1 || jsz.Consumers != 1 || jsz.Messages != 3 {
		t.Fatalf("/jsz totals: %+v", jsz)
	}
	if len(jsz.AccountDetails) != 1 || len(jsz.AccountDetails[0].Streams) != 1 {
		t.Fatalf("/jsz details: %+v", jsz.AccountDetails)
	}
	sd := jsz.AccountDetails[0].Streams[0]
	if sd.Name != "TELEMETRY" || sd.State.Messages != 3 || len(sd.Consumers) != 1 || sd.Consumers[0].Name != "dash" {
		t.Fatalf("/jsz stream detail: %+v", sd)
	}
	var varz struct {
		JetStream struct {
			Config struct {
				SyncAlways bool `json:"sync_always"`
			} `json:"config"`
			Stats struct {
				Storage uint64 `json:"storage"`
				API     struct {
					Level int `json:"level"`
				} `json:"api"`
			} `json:"stats"`
		} `json:"jetstream"`
	}
	if err := json.Unmarshal([]byte(get(t, mon+"/varz")), &varz); err != nil {
		t.Fatal(err)
	}
	if v := varz.JetStream; !v.Config.SyncAlways || v.Stats.Storage == 0 || v.Stats.API.Level < 1 {
		t.Fatalf("/varz jetstream: %+v", v)
	}
	metrics := get(t, mon+"/metrics")
	for _, want := range []string{
		"leafbox_jetstream_messages 3",
		`leafbox_jetstream_advisories_total{type="stream_action"} 1`,
		`leafbox_jetstream_advisories_total{type="consumer_action"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Fatalf("/metrics lacks %q:\n%s", want, metrics)
		}
	}
	if h := get(t, mon+"/healthz"); !strings.Contains(h, `"ok"`) {
		t.Fatalf("/healthz: %s", h)
	}
}
