package main

import (
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
)

func TestPubRangeCoversAllOnce(t *testing.T) {
	for _, c := range []struct{ total, pubs int }{{50_000, 16}, {20_000, 1}, {10, 16}, {17, 16}, {10_000, 16}} {
		next := 0
		for p := range c.pubs {
			from, to := pubRange(c.total, c.pubs, p)
			require.Equal(t, next, from)
			require.Equal(t, true, to >= from)
			require.Equal(t, true, to-from <= c.total/c.pubs+1)
			next = to
		}
		require.Equal(t, c.total, next)
	}
	from, to := pubRange(17, 16, 0)
	require.Equal(t, 0, from)
	require.Equal(t, 2, to)
	from, to = pubRange(17, 16, 15)
	require.Equal(t, 16, from)
	require.Equal(t, 17, to)
}

func TestMQTTConnectPacket(t *testing.T) {
	got := mqttConnectPacket("ab", 300)
	want := []byte{0x10, 14, 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0x01, 0x2c, 0, 2, 'a', 'b'}
	require.DeepEqual(t, want, got)
	// A client id long enough for a two-byte remaining length.
	long := strings.Repeat("x", 200)
	got = mqttConnectPacket(long, 60)
	require.DeepEqual(t, []byte{0x10, 0xd4, 0x01}, got[:3]) // 212 = 0x54 | 0x80, 1
	require.Equal(t, 3+212, len(got))
}

func TestAppendRemainingLength(t *testing.T) {
	for _, c := range []struct {
		n    int
		want []byte
	}{{0, []byte{0}}, {127, []byte{0x7f}}, {128, []byte{0x80, 1}}, {16383, []byte{0xff, 0x7f}}, {16384, []byte{0x80, 0x80, 1}}, {268_435_455, []byte{0xff, 0xff, 0xff, 0x7f}}} {
		require.DeepEqual(t, c.want, appendRemainingLength(nil, c.n))
	}
}

func TestCheckConnack(t *testing.T) {
	require.NoError(t, checkConnack([]byte{0x20, 2, 0, 0}))
	require.NoError(t, checkConnack([]byte{0x20, 2, 1, 0})) // session present
	require.ErrorContains(t, checkConnack([]byte{0x20, 2, 0, 5}), "return code 5")
	require.ErrorContains(t, checkConnack([]byte{0x30, 2, 0, 0}), "not a CONNACK")
	require.ErrorContains(t, checkConnack([]byte{0x20, 3, 0, 0}), "not a CONNACK")
	require.ErrorContains(t, checkConnack([]byte{0x20}), "not a CONNACK")
}

func TestPerConnKiB(t *testing.T) {
	v, err := perConnKiB(10<<20, 10<<20+10_000*4096, 10_000)
	require.NoError(t, err)
	require.Equal(t, 4.0, v)
	v, err = perConnKiB(10<<20, 10<<20-1024*100, 100) // RSS can shrink: the figure says so
	require.NoError(t, err)
	require.Equal(t, -1.0, v)
	_, err = perConnKiB(1, 2, 0)
	require.ErrorContains(t, err, "0 connections")
}

func TestMQTTListenScenarios(t *testing.T) {
	w := defaultWorkload(false)
	var n int
	slugs := map[string]bool{}
	for _, sc := range selectGroups(scenarios(w), map[string]bool{groupMQTTListen: true}) {
		n++
		require.Equal(t, false, slugs[sc.slug])
		slugs[sc.slug] = true
		require.Equal(t, true, strings.HasPrefix(sc.metrics[0].Name, "vs "+sc.mqttRef+": "))
	}
	require.Equal(t, 10, n)
	only, err := parseOnly("mqttlisten")
	require.NoError(t, err)
	require.Equal(t, true, only[groupMQTTListen])
	require.Equal(t, "conns/s", unitConns.String())
	require.Equal(t, "KiB", unitKiB.String())
	require.Equal(t, "12,345", formatValue(12345.4, unitConns))
}
