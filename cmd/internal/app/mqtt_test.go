package app

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// mosquitto runs mosquitto_pub or mosquitto_sub against the App's MQTT
// listener and returns its output.
func mosquitto(t *testing.T, a *App, tool string, args ...string) (string, error) {
	t.Helper()
	host, port, _ := strings.Cut(a.MQTTAddr().String(), ":")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, tool, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
	return string(out), err
}

// A gateway with an mqtt block: mosquitto clients authenticate as the
// configured users, their permissions apply to the mapped subjects, and
// NATS and MQTT clients see each other's messages.
func TestMQTTListenerAuthAndPermissions(t *testing.T) {
	a := startGateway(t, `
jetstream: {enabled: false}
authorization:
  users:
    - user: dev
      password: s3cret
      permissions: {publish: ["sensors.>"], subscribe: ["cmd.>"]}
    - user: ops
      password: ops
mqtt:
  listen: 127.0.0.1:-1
`, Flags{})
	nc, err := nats.Connect(a.Addr().String(), nats.UserInfo("ops", "ops"))
	require.NoError(t, err)
	defer nc.Close()
	sub, err := nc.SubscribeSync("sensors.>")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())

	_, err = mosquitto(t, a, "mosquitto_pub", "-V", "mqttv311", "-u", "dev", "-P", "s3cret", "-q", "1", "-t", "sensors/floor3/temp", "-m", "21.5")
	require.NoError(t, err)
	m, err := sub.NextMsg(testTimeout)
	require.NoError(t, err)
	require.Equal(t, m.Subject, "sensors.floor3.temp")
	require.Equal(t, string(m.Data), "21.5")

	out, err := mosquitto(t, a, "mosquitto_pub", "-V", "mqttv5", "-u", "dev", "-P", "wrong", "-t", "sensors/x", "-m", "x")
	require.Equal(t, err != nil, true, "bad password refused: "+out)
	require.ErrorContains(t, mqttOutput(out), "Bad User Name or Password")

	// Publishing outside the permissions: MQTT 5 PUBACK 0x87; nothing
	// reaches NATS.
	other, err := nc.SubscribeSync("cmd.>")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	out, _ = mosquitto(t, a, "mosquitto_pub", "-V", "mqttv5", "-u", "dev", "-P", "s3cret", "-q", "1", "-t", "cmd/x", "-m", "x", "-d")
	require.ErrorContains(t, mqttOutput(out), "PUBACK", "RC:135")
	_, err = other.NextMsg(100e6)
	require.ErrorIs(t, err, nats.ErrTimeout)

	// Subscribing outside them: SUBACK 0x87 (mosquitto_sub reports it).
	out, _ = mosquitto(t, a, "mosquitto_sub", "-V", "mqttv5", "-u", "dev", "-P", "s3cret", "-t", "sensors/#", "-C", "1", "-W", "2")
	require.ErrorContains(t, mqttOutput(out), "denied")
}

type mqttOutput string

func (e mqttOutput) Error() string { return string(e) }

// A QoS 1 publish on a subject a local stream captures is stored before
// mosquitto_pub gets its PUBACK.
func TestMQTTQoS1StoredInStream(t *testing.T) {
	a := startGateway(t, "mqtt: {listen: 127.0.0.1:-1}\n", Flags{})
	nc, err := nats.Connect(a.Addr().String())
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "TELEMETRY", Subjects: []string{"telemetry.>"}})
	require.NoError(t, err)
	for i := range 5 {
		_, err = mosquitto(t, a, "mosquitto_pub", "-q", "1", "-t", "telemetry/pump/"+string(rune('a'+i)), "-m", "v")
		require.NoError(t, err)
		info, err := st.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, info.State.Msgs, uint64(i+1), "stored when acknowledged")
	}
	msg, err := st.GetLastMsgForSubject(ctx, "telemetry.pump.e")
	require.NoError(t, err)
	require.Equal(t, msg.Header.Get("Nmqtt-Pub"), "1")
}

// /varz has the mqtt block, /connz lists MQTT clients, /metrics counts them.
func TestMQTTMonitoring(t *testing.T) {
	a := startGateway(t, "jetstream: {enabled: false}\nmqtt: {listen: 127.0.0.1:-1}\n", Flags{})
	host, port, _ := strings.Cut(a.MQTTAddr().String(), ":")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	sub := exec.CommandContext(ctx, "mosquitto_sub", "-h", host, "-p", port, "-i", "watcher", "-t", "x/#", "-C", "1")
	subOut := make(chan string, 1)
	go func() { out, _ := sub.CombinedOutput(); subOut <- string(out) }()
	get := func(path string) string {
		resp, err := http.Get("http://" + a.MonitorAddr().String() + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return string(b)
	}
	awaitCond(t, ctx, "MQTT client in /connz", func() (bool, string) {
		c := get("/connz")
		return strings.Contains(c, `"name": "watcher"`) || strings.Contains(c, `"name":"watcher"`), c
	})
	require.ErrorContains(t, mqttOutput(get("/connz")), `"type": "mqtt"`)
	require.ErrorContains(t, mqttOutput(get("/varz")), `"mqtt": {`, `"port": `+port)
	require.ErrorContains(t, mqttOutput(get("/metrics")), "leafbox_mqtt_connections 1")
	_, err := mosquitto(t, a, "mosquitto_pub", "-t", "x/y", "-m", "bye")
	require.NoError(t, err)
	require.Equal(t, strings.TrimSpace(<-subOut), "bye")
}
