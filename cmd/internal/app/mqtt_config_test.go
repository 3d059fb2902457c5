package app

import (
	"log/slog"
	"testing"
	"time"

	"github.com/leafbox/leafbox/cmd/internal/config"
)

// mqtt.park_after reaches the listener: unset is the default, -1 never
// parks (a negative ParkAfter).
func TestMQTTListenerParkAfter(t *testing.T) {
	for _, c := range []struct {
		yaml string
		want time.Duration
	}{{"", 50 * time.Millisecond}, {"\n  park_after: 5ms", 5 * time.Millisecond}, {"\n  park_after: -1", -time.Second}} {
		cfg, err := config.Parse([]byte("mqtt:\n  listen: 1883" + c.yaml + "\n"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.SetDefaults(config.Env{Home: t.TempDir()})
		if err := cfg.Validate(); err != nil {
			t.Fatal(err)
		}
		mc, err := mqttListenerConfig(cfg, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if mc.ParkAfter != c.want {
			t.Errorf("park_after %q: ParkAfter %v, want %v", c.yaml, mc.ParkAfter, c.want)
		}
	}
}
