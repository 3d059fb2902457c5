package bridgetest_test

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/bridge"
	"github.com/leafbox/leafbox/bridge/bridgetest"
)

// TestSuiteMapped runs the suite against the line bridge through a
// device that carries each payload hex-encoded, as a Mapper: every case
// must map what it publishes and reads through it (a case comparing raw
// bytes would see hex and fail). The harness also says CleanStop does not
// apply, and fails if the suite opens a bridge for it anyway.
func TestSuiteMapped(t *testing.T) {
	bridgetest.Run(t, mappedHarness{})
}

type mappedHarness struct{}

func (mappedHarness) NotApplicable(name string) string {
	if name == "CleanStop" {
		return "declared not to apply, to test that the suite skips the case"
	}
	return ""
}

func (mappedHarness) Open(t *testing.T, routes bridgetest.Routes) (bridge.Bridge, bridgetest.Device) {
	if strings.HasSuffix(t.Name(), "/CleanStop") {
		t.Fatal("the suite ran a case the harness said does not apply")
	}
	b, dev := lineHarness{}.Open(t, routes)
	return b, hexDevice{dev}
}

// hexDevice sends and receives the suite's payloads hex-encoded.
type hexDevice struct{ bridgetest.Device }

func (d hexDevice) Send(ctx context.Context, payload []byte) error {
	return d.Device.Send(ctx, []byte(hex.EncodeToString(payload)))
}

func (d hexDevice) Receive(ctx context.Context) ([]byte, error) {
	p, err := d.Device.Receive(ctx)
	if err != nil {
		return nil, err
	}
	out, err := hex.DecodeString(string(p))
	if err != nil {
		return []byte("(not hex: " + string(p) + ")"), nil // fails the comparison, visibly
	}
	return out, nil
}

func (d hexDevice) WaitIdle(ctx context.Context) error {
	return d.Device.(bridgetest.IdleWaiter).WaitIdle(ctx)
}

func (d hexDevice) Published(data []byte) (string, bool) {
	out, err := hex.DecodeString(string(data))
	if err != nil {
		return "(not hex: " + string(data) + ")", true
	}
	return string(out), true
}

func (d hexDevice) Command(payload string) []byte { return []byte(hex.EncodeToString([]byte(payload))) }
