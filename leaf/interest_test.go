package leaf

import (
	"os"
	"strings"
	"testing"
)

// TestInterestScript replays testdata/interest.txt against the local
// interest table.
func TestInterestScript(t *testing.T) {
	data, err := os.ReadFile("testdata/interest.txt")
	if err != nil {
		t.Fatal(err)
	}
	table := newLocalInterest()
	allowAll := func(string) bool { return true }
	blocks := strings.Split(string(data), "\n\n")
	for _, block := range blocks {
		var lines []string
		for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
			if !strings.HasPrefix(l, "#") && l != "" {
				lines = append(lines, l)
			}
		}
		if len(lines) == 0 {
			continue
		}
		if len(lines) < 2 || lines[1] != "----" {
			t.Fatalf("malformed block %q", block)
		}
		cmd, want := strings.Fields(lines[0]), strings.Join(lines[2:], "\n")
		var out []byte
		switch cmd[0] {
		case "sub", "unsub", "qsub", "qunsub":
			key := interestKey{subject: cmd[1]}
			if strings.HasPrefix(cmd[0], "q") {
				key.queue = cmd[2]
			}
			delta := int32(1)
			if strings.Contains(cmd[0], "unsub") {
				delta = -1
			}
			if count, notify := table.change(key, delta); notify {
				out = appendInterest(out, key, count)
			}
		case "connect":
			out, _ = table.appendAll(nil, allowAll)
		default:
			t.Fatalf("unknown command %q", lines[0])
		}
		if got := strings.TrimSpace(strings.ReplaceAll(string(out), "\r\n", "\n")); got != want {
			t.Errorf("%s:\ngot:\n%s\nwant:\n%s", lines[0], got, want)
		}
	}
}

func TestHubInterestRoute(t *testing.T) {
	h := newHubInterest()
	for _, e := range []struct {
		subj, queue string
		first       bool
	}{
		{"orders.>", "", true}, {"orders.*", "", true}, {"orders.*", "billing", false},
		{"orders.eu", "shipping", true}, {"other", "", true},
	} {
		first, err := h.add(e.subj, e.queue, 1)
		if err != nil || first != e.first {
			t.Fatalf("add %s %s: first %v err %v", e.subj, e.queue, first, err)
		}
	}
	r := h.match([]byte("orders.eu"), nil)
	if r.canonical != "orders.*" || !r.plain || len(r.queues) != 2 {
		t.Fatalf("route %+v", r)
	}
	if r := h.match([]byte("orders.eu.1"), nil); r.canonical != "orders.>" || len(r.queues) != 0 {
		t.Fatalf("route %+v", r)
	}
	if r := h.match([]byte("nothing"), nil); r.canonical != "" || r.plain {
		t.Fatalf("route %+v", r)
	}
	if h.remove("orders.*", "") {
		t.Fatal("orders.* still has a queue entry")
	}
	if !h.remove("orders.*", "billing") || h.remove("orders.*", "billing") {
		t.Fatal("remove of the last entry")
	}
	if h.len() != 3 {
		t.Fatalf("len %d", h.len())
	}
}
