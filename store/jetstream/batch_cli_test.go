package jetstream

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
	"github.com/leafbox/leafbox/core/tooltest"
	"github.com/leafbox/leafbox/store/jsapi"
)

// TestAtomicBatchNatsCLI publishes an atomic batch with the official nats
// CLI (`nats pub --atomic`, v0.5.0, which asks for API level 2 first) to
// leafbox and to nats-server: both store the three lines as one batch and
// the CLI reports the same.
func TestAtomicBatchNatsCLI(t *testing.T) {
	t.Parallel()
	cli := tooltest.NatsCLI(t)
	srv := servertest.Start(t, server.Options{})
	conn := srv.InProcess("")
	eng, err := New(Config{StoreDir: t.TempDir()}, testBus{conn})
	require.NoError(t, err)
	require.NoError(t, eng.Start())
	t.Cleanup(func() { _ = eng.Close(); conn.Close() })
	hub, _, _ := startNATSServerJS(t)

	for name, url := range map[string]string{"leafbox": srv.ClientURL(), "nats-server": hub.ClientURL()} {
		t.Run(name, func(t *testing.T) {
			run := func(stdin, args string) string {
				cmd := exec.Command("bash", "-euc", "nats "+args)
				cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "NATS_URL="+url,
					"PATH="+filepath.Dir(cli)+string(os.PathListSeparator)+os.Getenv("PATH"))
				cmd.Stdin = strings.NewReader(stdin)
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("nats %s: %v\n%s", args, err, out)
				}
				return string(out)
			}
			run("", "stream add B --subjects 'b.>' --storage file --allow-batch --defaults")
			out := run("one\ntwo\nthree\n", "pub --atomic --send-on=newline b.x")
			if !strings.Contains(out, "Messages: 3 Sequence: 3") {
				t.Fatalf("nats pub --atomic:\n%s", out)
			}
			_, js := connectJS(t, url)
			ctx := testCtx(t)
			s, err := js.Stream(ctx, "B")
			require.NoError(t, err)
			require.Equal(t, s.CachedInfo().State.Msgs, uint64(3))
			var ids []string
			for seq := uint64(1); seq <= 3; seq++ {
				m, err := s.GetMsg(ctx, seq)
				require.NoError(t, err)
				ids = append(ids, m.Header.Get(jsapi.HeaderBatchID))
				require.Equal(t, m.Header.Get(jsapi.HeaderBatchSeq), string(rune('0'+seq)))
			}
			if ids[0] == "" || ids[0] != ids[1] || ids[1] != ids[2] {
				t.Fatalf("batch ids %q", ids)
			}
		})
	}
}
