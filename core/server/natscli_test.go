package server_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/core/tooltest"
)

// runCLI runs the nats CLI against s and returns its combined output.
func runCLI(ctx context.Context, t *testing.T, s *server.Server, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.CommandContext(ctx, tooltest.NatsCLI(t), append([]string{"--server", s.ClientURL(), "--no-context"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	return cmd
}

// waitSubs waits until the server has n subscriptions on subj, told by
// the server's interest events (WatchInterest), within wait.
func waitSubs(t *testing.T, s *server.Server, subj string, n int) {
	t.Helper()
	var mu sync.Mutex
	count := 0
	changed := make(chan struct{}, 1)
	existing, cancel := s.WatchInterest("", func(ev server.InterestEvent) {
		if ev.Subject != subj {
			return
		}
		mu.Lock()
		if ev.Added {
			count++
		} else {
			count--
		}
		mu.Unlock()
		select { // fn must not block: a pending wake-up is enough
		case changed <- struct{}{}:
		default:
		}
	})
	defer cancel()
	mu.Lock()
	for _, ev := range existing {
		if ev.Subject == subj {
			count++
		}
	}
	mu.Unlock()
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	for {
		mu.Lock()
		got := count
		mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-timeout.C:
			t.Fatalf("%d subscriptions on %q, want %d", got, subj, n)
		}
	}
}

func TestNatsCLI(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// nats sub / nats pub
	var subOut bytes.Buffer
	sub := runCLI(ctx, t, s, "sub", "cli.test", "--count", "1", "--raw")
	sub.Stdout, sub.Stderr = &subOut, &subOut
	require.NoError(t, sub.Start())
	waitSubs(t, s, "cli.test", 1)
	if out, err := runCLI(ctx, t, s, "pub", "cli.test", "hello from the cli").CombinedOutput(); err != nil {
		t.Fatalf("nats pub: %v\n%s", err, out)
	}
	require.NoError(t, sub.Wait())
	if !strings.Contains(subOut.String(), "hello from the cli") {
		t.Fatalf("nats sub printed %q", subOut.String())
	}

	// nats reply / nats req
	reply := runCLI(ctx, t, s, "reply", "cli.svc", "pong", "--count", "1")
	var replyOut bytes.Buffer
	reply.Stdout, reply.Stderr = &replyOut, &replyOut
	require.NoError(t, reply.Start())
	waitSubs(t, s, "cli.svc", 1)
	out, err := runCLI(ctx, t, s, "req", "cli.svc", "ping", "--raw").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "pong") {
		t.Fatalf("nats req: %v\n%s", err, out)
	}
	// natscli v0.5.0's reply exits 1 after --count even against
	// nats-server, so only its output is checked.
	_ = reply.Wait()
	if !strings.Contains(replyOut.String(), `Received on subject "cli.svc"`) {
		t.Fatalf("nats reply printed %q", replyOut.String())
	}

	// nats req with nobody listening reports no responders at once.
	out, err = runCLI(ctx, t, s, "req", "cli.nobody", "x").CombinedOutput()
	if !strings.Contains(string(out), "No responders are available") {
		t.Fatalf("nats req without responders: %v\n%s", err, out)
	}

	// nats bench pub/sub completes and counts every message.
	benchSub := runCLI(ctx, t, s, "bench", "sub", "cli.bench", "--msgs", "20000", "--no-progress")
	var benchOut bytes.Buffer
	benchSub.Stdout, benchSub.Stderr = &benchOut, &benchOut
	require.NoError(t, benchSub.Start())
	waitSubs(t, s, "cli.bench", 1)
	if out, err := runCLI(ctx, t, s, "bench", "pub", "cli.bench", "--msgs", "20000", "--size", "64", "--no-progress").CombinedOutput(); err != nil {
		t.Fatalf("nats bench pub: %v\n%s", err, out)
	}
	if err := benchSub.Wait(); err != nil {
		t.Fatalf("nats bench sub: %v\n%s", err, benchOut.String())
	}
	if !strings.Contains(benchOut.String(), "20,000") {
		t.Fatalf("nats bench sub output: %s", benchOut.String())
	}
}
