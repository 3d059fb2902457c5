//go:build unix

package jetstream

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/tooltest"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// readmeDeadLetterSteps returns the commands of the README's dead-letter
// example, as written.
func readmeDeadLetterSteps(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	start := slices.Index(lines, "#### Advisories and dead letters")
	if start < 0 {
		t.Fatal(`README.md has no "#### Advisories and dead letters" section`)
	}
	var steps []string
	in := false
	for _, line := range lines[start+1:] {
		if strings.HasPrefix(line, "#") && !in {
			break
		}
		if strings.HasPrefix(line, "```") {
			if in {
				return steps
			}
			in = line == "```sh"
			continue
		}
		if in && strings.TrimSpace(line) != "" {
			steps = append(steps, line)
		}
	}
	t.Fatal("README dead-letter example: no sh block")
	return nil
}

// TestDeadLetterREADME runs the README's dead-letter example with the
// nats CLI, line by line, against leafbox and against nats-server: each
// step succeeds, and the dead-letter stream holds the same advisory,
// naming the message that the last step fetches.
func TestDeadLetterREADME(t *testing.T) {
	t.Parallel()
	steps := readmeDeadLetterSteps(t)
	cli := tooltest.NatsCLI(t)
	env := newTestEnv(t, Config{})
	hub := leaftest.StartHub(t, leaftest.HubOptions{Config: "jetstream {\n  store_dir: \"" + t.TempDir() + "\"\n}"})
	for name, url := range map[string]string{"leafbox": env.srv.ClientURL(), "nats-server": hub.ClientURL()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			var outs []string
			for _, step := range steps {
				cmd := exec.Command("bash", "-euc", step)
				cmd.Env = append(os.Environ(), "HOME="+home, "NATS_URL="+url,
					"PATH="+filepath.Dir(cli)+string(os.PathListSeparator)+os.Getenv("PATH"))
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", step, err, out)
				}
				outs = append(outs, string(out))
			}
			dlq, orig := outs[len(outs)-2], outs[len(outs)-1]
			for _, want := range []string{
				"on Subject $JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.ORDERS.worker",
				`"type":"io.nats.jetstream.advisory.v1.max_deliver"`,
				`"stream":"ORDERS","consumer":"worker","stream_seq":1,"deliveries":2}`,
			} {
				if !strings.Contains(dlq, want) {
					t.Errorf("nats stream get DLQ 1 lacks %q:\n%s", want, dlq)
				}
			}
			if !strings.Contains(orig, "on Subject orders.1") || !strings.Contains(orig, "poison") {
				t.Errorf("nats stream get ORDERS 1:\n%s", orig)
			}
		})
	}
}
