package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestShedsNewWorkUnderMemoryPressure runs leafbox with memory_limit:
// 96MB and a JetStream memory store allowed ten times that, and has
// nats.go publishers pour 256 KiB messages into a memory stream: instead
// of growing past the limit (and meeting the OOM killer on a board),
// leafbox answers the publishes 503 "insufficient resources" and refuses
// new connections, its anonymous RSS stays under the limit, /varz and
// /metrics count it, and once the stream is deleted it accepts work
// again. The binary is built without the race detector, whose shadow
// memory would be counted in RSS.
func TestShedsNewWorkUnderMemoryPressure(t *testing.T) {
	const limit = 96 << 20
	bin := filepath.Join(t.TempDir(), "leafbox")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "leafbox.yaml")
	if err := os.WriteFile(conf, []byte("memory_limit: 96MB\njetstream: {enabled: true, max_memory_store: 1GB}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &proc{t: t}
	p.cmd = exec.Command(bin, "run", "--config", conf, "--addr", "127.0.0.1", "--port", "-1", "--http-port", "-1",
		"--store-dir", filepath.Join(dir, "store"), "--ports-file-dir", dir)
	p.cmd.Env = append(os.Environ(), "GOMEMLIMIT=", "LEAFBOX_CONFIG=", "STATE_DIRECTORY=")
	p.cmd.Stderr = &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	pf, _ := p.waitPorts(dir)
	url := loopbackURL(t, pf.Nats).String()
	mon := loopbackURL(t, pf.Monitoring).String()

	// Anonymous RSS (the heap, not the binary's file pages), sampled
	// while the burst runs.
	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := rssAnon(p.cmd.Process.Pid); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BURST", Subjects: []string{"burst.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	// Four publishers with 8 publishes in flight each; a message would
	// need 400 of them to pass the limit.
	payload := make([]byte, 256<<10)
	var stored, refused atomic.Int64
	errc := make(chan error, 4)
	for w := 0; w < 4; w++ {
		go func() {
			for stored.Load()*int64(len(payload)) < 2*limit && refused.Load() < 50 {
				var futures []jetstream.PubAckFuture
				for range 8 {
					f, err := js.PublishAsync("burst.x", payload)
					if err != nil {
						errc <- err
						return
					}
					futures = append(futures, f)
				}
				for _, f := range futures {
					select {
					case <-f.Ok():
						stored.Add(1)
					case err := <-f.Err():
						var apiErr *jetstream.APIError
						if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10023 || apiErr.Code != 503 {
							errc <- err
							return
						}
						refused.Add(1)
					case <-ctx.Done():
						errc <- ctx.Err()
						return
					}
				}
			}
			errc <- nil
		}()
	}
	for range 4 {
		if err := <-errc; err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	if refused.Load() == 0 {
		t.Fatalf("%d messages of 256 KiB stored (%d MiB), none refused: the memory limit of 96 MiB was not defended", stored.Load(), stored.Load()/4)
	}
	// New connections are refused too. The server writes INFO and -ERR
	// 'insufficient resources' and closes; nats.go names the -ERR or, when
	// its CONNECT meets the closed socket first, the broken pipe
	// (/varz's refused_connections, below, counts it either way).
	if c, err := nats.Connect(url, nats.MaxReconnects(0)); err == nil {
		c.Close()
		t.Error("a new connection was accepted under memory pressure")
	} else {
		t.Logf("connect under memory pressure: %v", err)
	}
	close(stop)
	<-sampled
	t.Logf("stored %d messages (%d MiB), refused %d; peak anonymous RSS %.1f MiB, limit 96 MiB",
		stored.Load(), stored.Load()/4, refused.Load(), float64(peak.Load())/(1<<20))
	if peak.Load() >= limit {
		t.Errorf("anonymous RSS reached %.1f MiB, over the memory limit of 96 MiB", float64(peak.Load())/(1<<20))
	}

	var varz struct {
		Shed struct {
			Pressure           bool   `json:"pressure"`
			Episodes           uint64 `json:"episodes"`
			RefusedConnections uint64 `json:"refused_connections"`
			RefusedPublishes   uint64 `json:"refused_publishes"`
		} `json:"shed"`
	}
	if err := json.Unmarshal([]byte(get(t, mon+"/varz")), &varz); err != nil {
		t.Fatal(err)
	}
	if !varz.Shed.Pressure || varz.Shed.Episodes == 0 || varz.Shed.RefusedConnections == 0 || varz.Shed.RefusedPublishes < uint64(refused.Load()) {
		t.Errorf("/varz shed: %+v, want pressure, an episode, a refused connection and %d refused publishes", varz.Shed, refused.Load())
	}
	metrics := get(t, mon+"/metrics")
	for _, want := range []string{"leafbox_memory_pressure 1", "leafbox_shed_connections_total ", "leafbox_shed_publishes_total "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	// The stream goes: the memory comes back and so does new work.
	if err := js.DeleteStream(ctx, "BURST"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(waitTimeout)
	for {
		if err := json.Unmarshal([]byte(get(t, mon+"/varz")), &varz); err != nil {
			t.Fatal(err)
		}
		if !varz.Shed.Pressure {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still under memory pressure %v after the stream was deleted; log:\n%s", waitTimeout, p.log())
		}
		time.Sleep(20 * time.Millisecond) // polling /varz: no event to wait on from outside
	}
	nc2, err := nats.Connect(url)
	if err != nil {
		t.Fatalf("connect after the pressure: %v", err)
	}
	defer nc2.Close()
	js2, _ := jetstream.New(nc2)
	if _, err := js2.CreateStream(ctx, jetstream.StreamConfig{Name: "AFTER", Subjects: []string{"after.>"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := js2.Publish(ctx, "after.x", []byte("ok")); err != nil {
		t.Fatalf("publish after the pressure: %v", err)
	}
	for _, want := range []string{"memory pressure: refusing new connections", "memory pressure over"} {
		if !strings.Contains(p.log(), want) {
			t.Errorf("log lacks %q:\n%s", want, p.log())
		}
	}
}

// rssAnon returns RssAnon of /proc/PID/status in bytes, or 0.
func rssAnon(pid int) int64 {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
