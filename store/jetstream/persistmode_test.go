package jetstream

import (
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store/jsapi"
	"github.com/leafbox/leafbox/store/vfs"
)

// TestPersistModeAsyncAcksBeforeSync blocks every fsync of the streams'
// message files, in sync-always mode: a stream with persist_mode async
// acks a publish anyway, while a default stream's ack waits until the
// fsync covering its message returns.
func TestPersistModeAsyncAcksBeforeSync(t *testing.T) {
	t.Parallel()
	var block atomic.Bool
	entered := make(chan string, 64)
	release := make(chan struct{})
	fs := vfs.Inject(vfs.NewMem(), func(op vfs.Op, path string) error {
		if op == vfs.OpSync && block.Load() && strings.Contains(path, "/msgs/") {
			select {
			case entered <- path:
			default:
			}
			<-release
		}
		return nil
	})
	env := newTestEnvWith(t, &testEnv{t: t, cfg: Config{StoreDir: "/js"}, fs: fs})
	unblock := func() {
		if block.CompareAndSwap(true, false) {
			close(release)
		}
	}
	t.Cleanup(unblock)
	ctx := testCtx(t)
	_, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "A", Subjects: []string{"a"}, Storage: njs.FileStorage, PersistMode: njs.AsyncPersistMode})
	require.NoError(t, err)
	_, err = env.js.CreateStream(ctx, njs.StreamConfig{Name: "D", Subjects: []string{"d"}, Storage: njs.FileStorage})
	require.NoError(t, err)
	block.Store(true)

	fa, err := env.js.PublishAsync("a", []byte("async"))
	require.NoError(t, err)
	select {
	case ack := <-fa.Ok():
		require.Equal(t, ack.Sequence, uint64(1))
	case err := <-fa.Err():
		t.Fatal(err)
	case <-ctx.Done():
		t.Fatal("persist_mode async: no ack while the fsync is held")
	}

	fd, err := env.js.PublishAsync("d", []byte("default"))
	require.NoError(t, err)
	for p := ""; !strings.Contains(p, "/D/"); {
		select {
		case p = <-entered:
		case <-ctx.Done():
			t.Fatal("the default stream never synced")
		}
	}
	select {
	case <-fd.Ok():
		t.Fatal("default persist mode acked before the fsync returned")
	case err := <-fd.Err():
		t.Fatal(err)
	default:
	}
	unblock()
	select {
	case ack := <-fd.Ok():
		require.Equal(t, ack.Sequence, uint64(1))
	case err := <-fd.Err():
		t.Fatal(err)
	case <-ctx.Done():
		t.Fatal("no ack after the fsync")
	}
}

// TestPersistModeMatchesNatsServer: nats-server v2.15.2 and leafbox
// answer the same to persist_mode async on memory storage, with
// allow_atomic, on file storage, and to an update that changes it.
func TestPersistModeMatchesNatsServer(t *testing.T) {
	t.Parallel()
	_, hnc, _ := startNATSServerJS(t)
	env := newTestEnv(t, Config{})
	run := func(t *testing.T, nc *nats.Conn) []string {
		ctx := testCtx(t)
		var out []string
		for _, r := range []struct{ subj, body string }{
			{"CREATE.M", `{"name":"M","storage":"memory","persist_mode":"async"}`},
			{"CREATE.AA", `{"name":"AA","storage":"file","persist_mode":"async","allow_atomic":true}`},
			{"CREATE.A", `{"name":"A","subjects":["a"],"storage":"file","persist_mode":"async"}`},
			{"UPDATE.A", `{"name":"A","subjects":["a"],"storage":"file"}`},
			{"UPDATE.A", `{"name":"A","subjects":["a","b"],"storage":"file","persist_mode":"async"}`},
			{"CREATE.D", `{"name":"D","subjects":["d"],"storage":"file"}`},
			{"UPDATE.D", `{"name":"D","subjects":["d"],"storage":"file","persist_mode":"async"}`},
			{"CREATE.T", `{"name":"T","subjects":["t"],"storage":"file","allow_atomic":true}`},
		} {
			m, err := nc.RequestWithContext(ctx, "$JS.API.STREAM."+r.subj, []byte(r.body))
			require.NoError(t, err)
			var resp struct {
				Error  *jsapi.APIError `json:"error"`
				Config *struct {
					PersistMode string `json:"persist_mode"`
					Atomic      bool   `json:"allow_atomic"`
				} `json:"config"`
			}
			require.NoError(t, json.Unmarshal(m.Data, &resp))
			line := r.subj + ": "
			if resp.Error != nil {
				b, _ := json.Marshal(resp.Error)
				line += string(b)
			} else {
				b, _ := json.Marshal(resp.Config)
				line += "ok " + string(b)
			}
			out = append(out, line)
		}
		return out
	}
	var ref, got []string
	t.Run("nats-server", func(t *testing.T) { ref = run(t, hnc) })
	t.Run("leafbox", func(t *testing.T) { got = run(t, env.nc) })
	require.Equal(t, strings.Join(got, "\n"), strings.Join(ref, "\n"))
	if testing.Verbose() {
		t.Logf("nats-server:\n%s", strings.Join(ref, "\n"))
	}
}
