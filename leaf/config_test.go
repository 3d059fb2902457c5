package leaf

import (
	"errors"
	"testing"
	"time"
)

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"minimal", Config{URLs: []string{"nats-leaf://hub:7422"}}, true},
		{"tls and user", Config{URLs: []string{"tls://u:p@hub", "nats://hub2:1"}}, true},
		{"no url", Config{}, false},
		{"websocket", Config{URLs: []string{"ws://hub:8080"}}, false},
		{"bad scheme", Config{URLs: []string{"http://hub"}}, false},
		{"path", Config{URLs: []string{"nats://hub:7422/x"}}, false},
		{"bad compression", Config{URLs: []string{"nats://hub"}, Compression: "zstd"}, false},
		{"bad deny", Config{URLs: []string{"nats://hub"}, DenyExports: []string{"a..b"}}, false},
		{"max below min", Config{URLs: []string{"nats://hub"}, ReconnectMin: time.Minute, ReconnectMax: time.Second}, false},
		{"jitter", Config{URLs: []string{"nats://hub"}, ReconnectJitter: 1.5}, false},
		{"blank name", Config{URLs: []string{"nats://hub"}, Name: "a b"}, false},
		{"thresholds", Config{URLs: []string{"nats://hub"}, RTTThresholds: []time.Duration{50, 10}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not wrap ErrInvalidConfig", err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	c := Config{URLs: []string{"nats-leaf://hub"}}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Compression != CompressionS2Auto || c.ReconnectMin != DefaultReconnectMin || c.ReconnectMax != DefaultReconnectMax ||
		c.ReconnectJitter != DefaultReconnectJitter || c.PingInterval != DefaultPingInterval || c.MaxPingsOut != 2 ||
		c.MaxPending != DefaultMaxPending || c.ServerID == "" || c.Name != c.ServerID || c.Version != DefaultVersion ||
		len(c.RTTThresholds) != 3 {
		t.Fatalf("defaults: %+v", c)
	}
	r, err := parseRemoteURL("nats-leaf://user:pw@hub")
	if err != nil || r.address() != "hub:7422" || r.redacted() != "nats-leaf://user:xxxxx@hub:7422" || r.tls {
		t.Fatalf("remote %+v %v", r, err)
	}
	learned, ok := learnedRemote("10.0.0.2:7422", r)
	if !ok || learned.address() != "10.0.0.2:7422" || learned.url.User.Username() != "user" || learned.tlsName != "hub" {
		t.Fatalf("learned %+v", learned)
	}
}

func TestNormalizeCompression(t *testing.T) {
	for in, want := range map[string]string{
		"": CompressionS2Auto, "on": CompressionS2Auto, "enabled": CompressionS2Auto, "true": CompressionS2Auto,
		"auto": CompressionS2Auto, "s2_auto": CompressionS2Auto, "off": CompressionOff, "disabled": CompressionOff,
		"false": CompressionOff, "accept": CompressionAccept, "fast": CompressionS2Fast, "S2_Better": CompressionS2Better,
		"best": CompressionS2Best, "uncompressed": CompressionS2Uncompressed,
	} {
		if got, err := NormalizeCompression(in); err != nil || got != want {
			t.Errorf("NormalizeCompression(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
