package bridgetest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/leafbox/leafbox/bridge/bridgetest"
)

// TestSuite runs the conformance suite against the line bridge.
func TestSuite(t *testing.T) {
	bridgetest.Run(t, lineHarness{})
}

// faultEnv names the fault TestMisbehaving's child process runs with.
const faultEnv = "BRIDGETEST_FAULT"

// faultCases maps each fault to the case that must catch it.
var faultCases = map[string]struct {
	faults faults
	catch  string // the suite case that fails
}{
	"blocking-subscriber": {faults{blockingSubscriber: true}, "Backpressure"},
	"ack-before-store":    {faults{ackBeforeStore: true}, "StoreBeforeAck"},
	"ack-before-device":   {faults{ackBeforeDevice: true}, "OutboundFromStream"},
	"ignore-stop":         {faults{ignoreStop: true}, "CleanStop"},
	"ignore-drop":         {faults{ignoreDrop: true}, "Reconnect"},
	"leak-subscription":   {faults{leakSubscription: true}, "OpenClose"},
}

// TestMisbehaving proves the suite fails a bridge that misbehaves: each
// fault runs the case that should catch it in a child process, which must
// fail.
func TestMisbehaving(t *testing.T) {
	if name := os.Getenv(faultEnv); name != "" {
		fc := faultCases[name]
		bridgetest.Suite{Harness: lineHarness{faults: fc.faults}, Timeout: 2 * time.Second, BackpressureMsgs: 500}.Run(t)
		return
	}
	for name, fc := range faultCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestMisbehaving$/^"+fc.catch+"$", "-test.v", "-test.timeout=60s")
			cmd.Env = append(os.Environ(), faultEnv+"="+name)
			start := time.Now()
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a bridge with fault %s:\n%s", name, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestMisbehaving/"+fc.catch) {
				t.Fatalf("fault %s: case %s did not fail:\n%s", name, fc.catch, out)
			}
			t.Logf("fault %s caught by %s in %v", name, fc.catch, time.Since(start).Round(time.Millisecond))
		})
	}
}
