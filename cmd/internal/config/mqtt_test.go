package config

import (
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

// The mqtt block: defaults, the address, and a bad value reported with its
// line.
func TestMQTTConfig(t *testing.T) {
	c := mustValidate(t, "listen: 127.0.0.1:4222\nmqtt:\n  listen: 1884\n  max_keepalive: 5m\n")
	require.Equal(t, c.MQTTListenAddr(), "127.0.0.1:1884")
	require.Equal(t, c.MQTT.MaxPacketSize, Size(DefaultMQTTMaxPacketSize))
	require.Equal(t, c.MQTT.MaxInflight, DefaultMQTTMaxInflight)
	require.Equal(t, time.Duration(c.MQTT.MaxKeepAlive), 5*time.Minute)
	require.Equal(t, time.Duration(c.MQTT.ParkAfter), 50*time.Millisecond)
	c = mustValidate(t, "mqtt: {listen: 1884, park_after: 200ms}\n")
	require.Equal(t, time.Duration(c.MQTT.ParkAfter), 200*time.Millisecond)
	c = mustValidate(t, "mqtt: {listen: 1884, park_after: -1}\n")
	require.Equal(t, time.Duration(c.MQTT.ParkAfter), -time.Second)

	c = mustValidate(t, "mqtt: {listen: 10.0.0.1}\n")
	require.Equal(t, c.MQTTListenAddr(), "10.0.0.1:1883")
	c = mustValidate(t, "jetstream: {enabled: false}\n")
	require.Equal(t, c.MQTTListenAddr(), "")

	err := validateErr(t, "mqtt:\n  listen: 127.0.0.1:1883\n  max_inflight: 70000\n  min_keepalive: 10m\n  max_keepalive: 1m\n")
	require.ErrorContains(t, err, "line 3", "mqtt.max_inflight: 70000 is out of range", "mqtt.min_keepalive: 10m0s is above max_keepalive")
	err = validateErr(t, "mqtt: {listen: 1883, max_sessions: -1, max_retained_bytes: -1}\n")
	require.ErrorContains(t, err, "mqtt.max_sessions: must not be negative", "mqtt.max_retained_bytes: must not be negative")
	for _, bad := range []string{"100us", "2h", "-5ms", "-2"} {
		err = validateErr(t, "mqtt:\n  listen: 1883\n  park_after: "+bad+"\n")
		require.ErrorContains(t, err, "line 3", "mqtt.park_after:", "is out of range (1ms to 1h0m0s, or -1 to never park)")
	}
	err = validateErr(t, "mqtt: {listen: 127.0.0.1:4222}\n")
	require.ErrorContains(t, err, "mqtt.listen: port 4222 is also the client port")
	err = validateErr(t, "mqtt: {max_queue: 3}\n")
	require.ErrorContains(t, err, "mqtt.listen: missing")
	err = validateErr(t, "mqtt: {listen: 1883, tls: {}}\n")
	require.ErrorContains(t, err, "mqtt.tls.cert_file: missing")
	_, err = Parse([]byte("mqtt: {listen: 1883, max_inflite: 3}\n"))
	require.ErrorContains(t, err, "unknown key \"max_inflite\"", "max_inflight")
}
