package mqtt_test

import (
	"testing"

	"github.com/eclipse/paho.golang/packets"
	"github.com/leafbox/leafbox/core/mqtt"
	"github.com/leafbox/leafbox/core/require"
)

// A subscriber that stops reading is cut off alone once its pending bytes
// pass MaxPending; a subscriber that keeps up gets every message.
func TestSlowSubscriberCutOffAlone(t *testing.T) {
	slowSubscriberCutOffAlone(t, func(c *mqtt.Config) { c.MaxPending = 1 << 20 }, nil)
}

// slowSubscriberCutOffAlone runs the slow subscriber scenario on a
// listener configured by edit; before, when set, runs before the flood.
func slowSubscriberCutOffAlone(t *testing.T, edit func(*mqtt.Config), before func(*testEnv)) {
	e := newTestEnv(t, nil, edit)
	fast, _ := e.v5Client(t, "fast", nil)
	fast.sub(t, "flood/#", 0)
	slow := e.raw(t)
	slow.connect5("slow")
	slow.write(&packets.Subscribe{PacketID: 1, Subscriptions: []packets.SubOptions{{Topic: "flood/#"}}, Properties: &packets.Properties{}})
	require.Equal(t, slow.read().Type, packets.SUBACK)
	if before != nil {
		before(e)
	}
	// slow reads nothing from now on.
	nc := e.natsConn(t)
	payload := make([]byte, 16<<10)
	const n = 800 // 12.5MiB: more than the socket buffers hold
	for i := range n {
		require.NoError(t, nc.Publish("flood.x", payload))
		if i%50 == 49 {
			// Paced to the fast subscriber, which never falls behind.
			for range 50 {
				require.Equal(t, len(fast.next(t).Payload), len(payload))
			}
		}
	}
	require.Equal(t, e.mqtt.Stats().SlowConsumers, int64(1))
	// The fast one is still connected and receiving.
	require.NoError(t, nc.Publish("flood.after", []byte("still here")))
	require.Equal(t, string(fast.next(t).Payload), "still here")
}
