package app

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf/outbox"
	"github.com/nats-io/nats.go/jetstream"
)

const (
	encTestKey     = "gateway key from the env, 32 B.."
	encTestPayload = "reading-4f1c-confidential"
)

// encryptedGateway is a gateway with jetstream.cipher set, the key from
// $LEAFBOX_JS_KEY (key), and one uplink toward a hub that is not there,
// so its outbox keeps what it captures.
func encryptedGateway(t *testing.T, state, cipher, key string) *Config {
	t.Helper()
	src := "jetstream: {cipher: " + cipher + "}\n" + `
leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}
uplinks: [{name: up, subjects: [up.>], hub_subject_prefix: s.}]
`
	if cipher == "" {
		src = strings.Replace(src, "jetstream: {cipher: }\n", "", 1)
	}
	return loopbackConfig(t, src, Env{StateDirectory: state, Machine: Machine{Memory: 16 << 30}, JSKey: key})
}

// TestAppEncryptedStore runs a gateway with jetstream.cipher: a file
// stream, its consumer and the uplink's outbox hold no plaintext payload
// on disk; a restart with another key, or without one, fails to start
// naming the stream; the right key reads everything back.
func TestAppEncryptedStore(t *testing.T) {
	state := t.TempDir()
	ctx := testContext(t)
	c := encryptedGateway(t, state, "chachapoly", encTestKey)
	require.NoError(t, c.Validate())
	a, err := Build(c, Flags{})
	require.NoError(t, err)
	require.NoError(t, a.Start())
	nc := natsConnect(t, "nats://"+a.Addr().String())
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	for range 20 {
		_, err := js.Publish(ctx, "s.x", []byte(encTestPayload))
		require.NoError(t, err)
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "C", AckPolicy: jetstream.AckExplicitPolicy})
	require.NoError(t, err)
	batch, err := cons.Fetch(5)
	require.NoError(t, err)
	for m := range batch.Messages() {
		require.NoError(t, m.DoubleAck(ctx))
	}
	require.NoError(t, nc.Publish("up.reading", []byte(encTestPayload)))
	require.NoError(t, nc.Flush())
	awaitUplink(t, ctx, a, "the outbox stored the reading", func(s outbox.Status) bool { return s.Stored >= 1 })
	nc.Close()
	shutdown(t, a)

	// No file under the state directory holds the payload; the stream,
	// the consumer and the outbox each have a key file.
	keys := map[string]int{}
	err = filepath.WalkDir(state, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(encTestPayload)) || bytes.Contains(b, []byte(encTestKey)) {
			t.Errorf("%s holds the payload or the key in plaintext", path)
		}
		keys[d.Name()]++
		return nil
	})
	require.NoError(t, err)
	if keys["stream.key"] < 2 || keys["consumer.key"] < 1 {
		t.Fatalf("key files: %v; want stream.key for S and the outbox, consumer.key for C", keys)
	}

	for _, tc := range []struct{ name, cipher, key, want string }{
		{"wrong key", "chachapoly", "somebody else's key, 32 bytes...", "the key does not open stream.key"},
		{"no key", "", "", "no key is configured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := encryptedGateway(t, state, tc.cipher, tc.key)
			require.NoError(t, c.Validate())
			a, err := Build(c, Flags{})
			if err == nil {
				err = a.Start()
				shutdown(t, a)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "stream S") {
				t.Fatalf("start: %v; want an error naming stream S and %q", err, tc.want)
			}
			if strings.Contains(err.Error(), encTestKey) || (tc.key != "" && strings.Contains(err.Error(), tc.key)) {
				t.Fatalf("the error shows a key: %v", err)
			}
		})
	}

	a = startConfig(t, encryptedGateway(t, state, "chachapoly", encTestKey), Flags{})
	js, err = jetstream.New(natsConnect(t, "nats://"+a.Addr().String()))
	require.NoError(t, err)
	st, err = js.Stream(ctx, "S")
	require.NoError(t, err)
	m, err := st.GetMsg(ctx, 20)
	require.NoError(t, err)
	require.DeepEqual(t, string(m.Data), encTestPayload)
	ci, err := st.Consumer(ctx, "C")
	require.NoError(t, err)
	info, err := ci.Info(ctx)
	require.NoError(t, err)
	require.DeepEqual(t, info.AckFloor.Stream, uint64(5))
	if got := a.UplinkStatus()[0].BacklogMsgs; got != 1 {
		t.Fatalf("outbox backlog %d after restart, want 1", got)
	}
}

// shutdown stops a within the test timeout.
func shutdown(t *testing.T, a *App) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := a.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}
