package jetstream

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/jsapi"
)

// TestAtomicBatchSurvivesKill9 runs the engine in a child process while
// four publishers commit batches of 1 to 24 messages of 4 KiB (writes of
// up to ~100 KiB), kills the child with SIGKILL once 60 commits were
// acknowledged, with the publishers still going, and restarts a child on
// the same store: every acknowledged batch is there, and every batch
// there is whole. (The same test function is the child: see startChild.)
func TestAtomicBatchSurvivesKill9(t *testing.T) {
	if serveAsChild(t) {
		return
	}
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "store")
	start := func() (*exec.Cmd, string) { return startChild(t, dir) }

	child, u := start()
	nc0, err := nats.Connect(u, nats.NoReconnect())
	require.NoError(t, err)
	js, err := njs.New(nc0)
	require.NoError(t, err)
	ctx := testCtx(t)
	_, err = js.CreateStream(ctx, njs.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: njs.FileStorage, AllowAtomicPublish: true})
	require.NoError(t, err)
	nc0.Close()

	var (
		mu    sync.Mutex
		acked []string
		wg    sync.WaitGroup
	)
	enough := make(chan struct{})
	var once sync.Once
	pad := strings.Repeat("p", 4<<10)
	for p := range 4 {
		nc, err := nats.Connect(u, nats.NoReconnect())
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				n := 1 + (i*7+p*5)%24
				id := fmt.Sprintf("b%d.%d-%d", p, i, n)
				var r *nats.Msg
				for k := 1; k <= n; k++ {
					commit := ""
					if k == n {
						commit = "1"
					}
					var rerr error
					r, rerr = nc.RequestMsg(batchMsg(fmt.Sprint("s.", p), id, k, commit, pad), testTimeout)
					if rerr != nil {
						return // the child is dead
					}
				}
				var ack jsapi.PubAckResponse
				if json.Unmarshal(r.Data, &ack) == nil && ack.Error == nil && ack.PubAck != nil && ack.Batch == id {
					mu.Lock()
					acked = append(acked, id)
					if len(acked) >= 60 {
						once.Do(func() { close(enough) })
					}
					mu.Unlock()
				}
			}
		}()
	}
	select {
	case <-enough:
	case <-ctx.Done():
		t.Fatal("not enough batches acknowledged")
	}
	require.NoError(t, child.Process.Kill())
	_ = child.Wait()
	wg.Wait()
	mu.Lock()
	survivors := append([]string(nil), acked...)
	mu.Unlock()

	_, u = start()
	_, js = connectJS(t, u)
	have, want := batchSizesOf(t, js, "S")
	for id, n := range have {
		if n != want[id] {
			t.Errorf("batch %s: %d of %d messages after kill -9", id, n, want[id])
		}
	}
	for _, id := range survivors {
		if have[id] == 0 {
			t.Errorf("acknowledged batch %s lost", id)
		}
	}
	t.Logf("%d batches acknowledged before the kill, %d present after it", len(survivors), len(have))
}
