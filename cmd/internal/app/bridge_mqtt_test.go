package app

import (
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge/mqtt"
	"github.com/leafbox/leafbox/cmd/internal/config"
)

func TestMQTTBridgeSpecs(t *testing.T) {
	c, err := config.Parse([]byte(`server_name: gw1
bridges:
  mqtt:
    - name: site
      account: A
      server: 127.0.0.1:1883
      keepalive: 15s
      inbound: [{from: "sensors/#", to: "site.", store: true}]
      outbound: [{from: "cmd.>", strip_prefix: "cmd.", to: "devices/", qos: 0, retain: true, stream: CMD}]
`))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDefaults(config.Env{})
	specs, err := mqttBridgeSpecs(c)
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 1 || specs[0].Kind != "mqtt" || specs[0].Name != "site" || specs[0].Account != "A" {
		t.Fatalf("specs %+v", specs)
	}
	entry := specs[0].Config.(config.MQTTBridgeConfig)
	if entry.ClientID != "leafbox-gw1-site" || entry.SessionExpiry == nil || time.Duration(*entry.SessionExpiry) != config.DefaultMQTTSessionExpiry {
		t.Fatalf("effective entry %+v", entry)
	}
	br, err := specs[0].New()
	if err != nil {
		t.Fatal(err)
	}
	got := br.(*mqtt.Bridge).Config()
	want := []mqtt.InboundRoute{{From: "sensors/#", To: "site.", QoS: 1, Store: true}}
	if got.ClientID != "leafbox-gw1-site" || got.KeepAlive != 15*time.Second || got.Version != mqtt.V5 ||
		len(got.Inbound) != 1 || got.Inbound[0] != want[0] ||
		len(got.Outbound) != 1 || got.Outbound[0] != (mqtt.OutboundRoute{From: "cmd.>", StripPrefix: "cmd.", To: "devices/", QoS: 0, Retain: true, Stream: "CMD", Durable: "mqtt_site_0"}) {
		t.Fatalf("bridge config %+v", got)
	}
}
