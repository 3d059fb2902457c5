package config

import (
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"go.yaml.in/yaml/v3"
)

const mqttExample = `server_name: gw1
bridges:
  mqtt:
    - name: site
      server: tls://broker.local
      version: 3.1.1
      username: leafbox
      password_file: mqtt.pass
      tls: {ca_file: cert.pem}
      session_expiry: 1h
      keepalive: 15s
      inbound:
        - {from: "sensors/#", to: "site.", store: true}
        - {from: "status/+", to: "status.", qos: 0}
      outbound:
        - {from: "cmd.>", strip_prefix: "cmd.", to: "devices/", qos: 2, retain: true, stream: CMD}
    - name: plc
      server: 127.0.0.1:1884
      password: hunter2
      client_id: plc-bridge
      response_topic: leafbox/plc/reply
      outbound:
        - {from: "plc.>", to: "plc/"}
`

func TestValidateMQTTBridge(t *testing.T) {
	dir := t.TempDir()
	writeCert(t, dir)
	writeFile(t, dir, "mqtt.pass", "s3cret\n")
	path := writeFile(t, dir, "leafbox.yaml", mqttExample)
	c, err := Load(path)
	require.NoError(t, err)
	c.SetDefaults(testEnv)
	require.NoError(t, c.Validate())

	site, plc := &c.Bridges.MQTT[0], &c.Bridges.MQTT[1]
	require.DeepEqual(t, c.MQTTClientID(site), "leafbox-gw1-site")
	require.DeepEqual(t, c.MQTTClientID(plc), "plc-bridge")
	require.DeepEqual(t, site.MQTTSessionExpiry(), time.Hour)
	require.DeepEqual(t, plc.MQTTSessionExpiry(), DefaultMQTTSessionExpiry)
	pw, err := c.MQTTPassword(site)
	require.NoError(t, err)
	require.DeepEqual(t, string(pw), "s3cret")
	pw, err = c.MQTTPassword(plc)
	require.NoError(t, err)
	require.DeepEqual(t, string(pw), "hunter2")
	require.DeepEqual(t, site.Inbound[0].QoSValue(), byte(1))
	require.DeepEqual(t, site.Inbound[1].QoSValue(), byte(0))
	require.DeepEqual(t, site.Outbound[0].QoSValue(), byte(2))
	require.DeepEqual(t, plc.Outbound[0].QoSValue(), byte(1))

	out, err := yaml.Marshal(c)
	require.NoError(t, err)
	if strings.Contains(string(out), "hunter2") || !strings.Contains(string(out), "password: '"+RedactedSecret+"'") &&
		!strings.Contains(string(out), "password: "+RedactedSecret) {
		t.Fatalf("printed config shows the password or no placeholder:\n%s", out)
	}
}

func TestValidateMQTTBridgeErrors(t *testing.T) {
	src := `bridges:
  mqtt:
    - name: a
      server: http://x
      version: 4.0
      password: p
      password_file: /nonexistent/pass
      keepalive: -1s
      response_topic: "a/#"
      inbound:
        - {from: "a/#/b", to: "site", qos: 3}
        - {from: "b/#", to: "b.", qos: 0, store: true}
      outbound:
        - {from: "b.>", to: "x/"}
        - {from: "c.>", strip_prefix: "d.", to: "x/#"}
        - {from: "e.>", to: "e/", stream: "a.b", durable: "x"}
    - name: b
      server: mqtt://h
      version: 3.1.1
      password: p
      response_topic: r
      tls: {ca_file: /nonexistent/ca.pem}
    - name: c
`
	err := validateErr(t, src)
	require.ErrorContains(t, err,
		`line 4: bridges.mqtt[0].server: server "http://x": scheme "http" is not mqtt`,
		`line 5: bridges.mqtt[0].version: "4.0" is not 5 or 3.1.1`,
		`line 7: bridges.mqtt[0].password_file: set password or password_file, not both`,
		`line 8: bridges.mqtt[0].keepalive: must not be negative`,
		`line 9: bridges.mqtt[0].response_topic:`,
		`line 11: bridges.mqtt[0].inbound[0].from:`,
		`bridges.mqtt[0].inbound[0].to: "site" must be empty or literal tokens ending in '.'`,
		`bridges.mqtt[0].inbound[0].qos: 3 is not 0, 1 or 2`,
		`bridges.mqtt[0].inbound[1].store: has no effect at qos 0`,
		`bridges.mqtt[0].outbound[0].from: "b.>" overlaps the subjects of inbound[1] ("b.b.>"): messages would loop`,
		`bridges.mqtt[0].outbound[1].strip_prefix: "d." is not a prefix of from "c.>"`,
		`bridges.mqtt[0].outbound[1].to: "x/#" must not hold a wildcard or NUL`,
		`bridges.mqtt[0].outbound[2].stream: "a.b" is not a stream name`,
		`bridges.mqtt[1].username: MQTT 3.1.1 sends a password only with a username`,
		`bridges.mqtt[1].response_topic: needs MQTT 5`,
		`bridges.mqtt[1].tls: needs a tls:// server`,
		`bridges.mqtt[1].tls.ca_file`,
		`bridges.mqtt[2].server: is required`,
		`bridges.mqtt[2]: needs at least one inbound or outbound route`,
	)
	if strings.Contains(err.Error(), "line 6") {
		t.Fatalf("the password's line is reported: %v", err)
	}
}

// TestMQTTBridgeDefaults: SetDefaults fills session_expiry and, with a
// server_name, client_id, so the effective configuration shows them.
func TestMQTTBridgeDefaults(t *testing.T) {
	c := mustValidate(t, "server_name: gw1\nbridges:\n  mqtt:\n    - {name: site, server: broker, outbound: [{from: a.>}]}\n"+
		"    - {name: plc, client_id: plc-bridge, session_expiry: 0s, server: broker, outbound: [{from: b.>}]}\n")
	site, plc := &c.Bridges.MQTT[0], &c.Bridges.MQTT[1]
	require.DeepEqual(t, site.ClientID, "leafbox-gw1-site")
	require.DeepEqual(t, *site.SessionExpiry, Duration(DefaultMQTTSessionExpiry))
	require.DeepEqual(t, plc.ClientID, "plc-bridge")
	require.DeepEqual(t, *plc.SessionExpiry, Duration(0))
	require.DeepEqual(t, plc.MQTTSessionExpiry(), time.Duration(0))
}
