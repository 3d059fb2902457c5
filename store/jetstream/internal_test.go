package jetstream

import (
	"testing"

	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/store"
)

// TestInternalStream checks that an internal stream persists across an
// engine restart while the API neither lists it nor can make one of its
// name, and that restore passes its directory over.
func TestInternalStream(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	st, err := env.eng.OpenInternalStream("mqtt.ACC.sess", store.Config{MaxMsgsPerSubject: 1})
	require.NoError(t, err)
	_, _, err = st.Store("$MQTT.sess.x", nil, []byte("one"), 0)
	require.NoError(t, err)
	_, _, err = st.Store("$MQTT.sess.x", nil, []byte("two"), 0)
	require.NoError(t, err)
	require.NoError(t, st.Close())

	_, err = env.js.CreateStream(ctx, njs.StreamConfig{Name: "mqtt.ACC.sess", Subjects: []string{"x"}})
	if err == nil {
		t.Fatal("the API created a stream with an internal stream's name")
	}
	env.restart()
	require.Equal(t, len(env.eng.RestoreFailures()), 0)
	names := env.js.StreamNames(ctx)
	for name := range names.Name() {
		t.Fatalf("the API lists %q", name)
	}
	require.NoError(t, names.Err())

	st, err = env.eng.OpenInternalStream("mqtt.ACC.sess", store.Config{MaxMsgsPerSubject: 1})
	require.NoError(t, err)
	defer st.Close()
	require.Equal(t, st.State().Msgs, uint64(1))
	m, err := st.LoadLast("$MQTT.sess.x", nil)
	require.NoError(t, err)
	require.Equal(t, string(m.Data), "two")

	for _, bad := range []string{"plain", ".hidden", "a.b/c", `a.b\c`} {
		_, err := env.eng.OpenInternalStream(bad, store.Config{})
		require.ErrorIs(t, err, store.ErrInvalidConfig, bad)
	}
}

// TestInternalStreamMemory: without a StoreDir internal streams are
// memory streams.
func TestInternalStreamMemory(t *testing.T) {
	t.Parallel()
	eng, err := New(Config{}, testBus{})
	require.NoError(t, err)
	st, err := eng.OpenInternalStream("mqtt.A.msgs", store.Config{})
	require.NoError(t, err)
	_, _, err = st.Store("s", nil, nil, 0)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	require.NoError(t, eng.Close())
	_, err = eng.OpenInternalStream("mqtt.A.msgs", store.Config{})
	require.ErrorIs(t, err, ErrClosed)
}
