package jetstream

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// transformResult is what transformScenario observed on one server.
type transformResult struct {
	stored      []string // "stream seq subject data"
	republished []string // "subject data headers"
	stamps      []string // problems with Nats-Time-Stamp
	configErr   string   // code and description of a refused transform
}

// transformScenario creates two streams with subject transforms using
// every mapping function, and republish (one headers only), publishes,
// and reports the stored subjects and the republished messages.
func transformScenario(t *testing.T, url string) transformResult {
	t.Helper()
	ctx := testCtx(t)
	nc, err := nats.Connect(url, nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := njs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var res transformResult
	const nRepublished = 5
	rp := make(chan *nats.Msg, 64)
	sub, err := nc.ChanSubscribe("rp.>", rp)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	cfgs := []njs.StreamConfig{{
		Name:     "TW",
		Subjects: []string{"tw.>"},
		SubjectTransform: &njs.SubjectTransformConfig{Source: "tw.*.*",
			Destination: "w.{{partition(5,1,2)}}.{{wildcard(2)}}.{{splitFromLeft(1,2)}}.{{sliceFromRight(2,2)}}.$1"},
		RePublish: &njs.RePublish{Source: "w.>", Destination: "rp.w.>"},
	}, {
		Name:     "TS",
		Subjects: []string{"ts.*"},
		Storage:  njs.MemoryStorage,
		SubjectTransform: &njs.SubjectTransformConfig{Source: "ts.*",
			Destination: "s.{{split(1,-)}}.{{left(1,3)}}.{{right(1,2)}}.{{sliceFromLeft(1,3)}}.{{splitFromRight(1,3)}}.{{partition(3)}}"},
		RePublish: &njs.RePublish{Source: ">", Destination: "rp.s.>", HeadersOnly: true},
	}}
	for _, cfg := range cfgs {
		if _, err := js.CreateStream(ctx, cfg); err != nil {
			t.Fatalf("create %s: %v", cfg.Name, err)
		}
	}
	pubs := []struct {
		subj, data string
		hdr        nats.Header
	}{
		{"tw.abcdef.xyz", "1", nil},
		{"tw.ab.q", "2", nats.Header{"X-A": []string{"a"}}},
		{"tw.abcdef.xyz", "3", nil},
		{"tw.untouched", "4", nil},
		{"ts.a-bcd--ef-", "5", nats.Header{"X-B": []string{"b"}}},
		{"ts.x", "six", nil},
	}
	for _, p := range pubs {
		if _, err := js.PublishMsg(ctx, &nats.Msg{Subject: p.subj, Data: []byte(p.data), Header: p.hdr}); err != nil {
			t.Fatalf("publish %s: %v", p.subj, err)
		}
	}
	times := map[string]time.Time{}
	for _, name := range []string{"TW", "TS"} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for seq := uint64(1); seq <= s.CachedInfo().State.LastSeq; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				t.Fatalf("%s get %d: %v", name, seq, err)
			}
			res.stored = append(res.stored, fmt.Sprintf("%s %d %s %s", name, seq, m.Subject, m.Data))
			times[fmt.Sprintf("%s %d", name, seq)] = m.Time
		}
	}
	for range nRepublished {
		select {
		case m := <-rp:
			var hs []string
			for k, v := range m.Header {
				if k != "Nats-Time-Stamp" {
					hs = append(hs, k+"="+strings.Join(v, ","))
				}
			}
			sort.Strings(hs)
			res.republished = append(res.republished, fmt.Sprintf("%s %q %s", m.Subject, m.Data, strings.Join(hs, " ")))
			ts, err := time.Parse(time.RFC3339Nano, m.Header.Get("Nats-Time-Stamp"))
			key := m.Header.Get("Nats-Stream") + " " + m.Header.Get("Nats-Sequence")
			if err != nil || !ts.Equal(times[key]) {
				res.stamps = append(res.stamps, fmt.Sprintf("%s: %q (stored %v, %v)", key, m.Header.Get("Nats-Time-Stamp"), times[key], err))
			}
		case <-ctx.Done():
			t.Fatalf("%d of %d republished: %q", len(res.republished), nRepublished, res.republished)
		}
	}
	// Nothing else is republished.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if len(rp) != 0 {
		t.Errorf("extra republished message: %q", (<-rp).Subject)
	}
	for _, bad := range []njs.StreamConfig{
		{SubjectTransform: &njs.SubjectTransformConfig{Source: "bad.*", Destination: "x.{{wildcard(2)}}"}},
		{SubjectTransform: &njs.SubjectTransformConfig{Source: "bad.*", Destination: "x.{{nosuch(1)}}"}},
		{SubjectTransform: &njs.SubjectTransformConfig{Source: "bad.*", Destination: "x.{{split(1)}}"}},
		{SubjectTransform: &njs.SubjectTransformConfig{Source: "bad..*", Destination: "x"}},
		{RePublish: &njs.RePublish{Source: "bad.>", Destination: "bad.again.>"}},
		{RePublish: &njs.RePublish{Source: "bad.*", Destination: "x.$2"}},
	} {
		bad.Name, bad.Subjects = "BAD", []string{"bad.>"}
		_, err = js.CreateStream(ctx, bad)
		var apiErr *njs.APIError
		if errors.As(err, &apiErr) {
			res.configErr += fmt.Sprintf("%d %d %s\n", apiErr.Code, apiErr.ErrorCode, apiErr.Description)
		} else {
			res.configErr += fmt.Sprintln(err)
		}
	}
	return res
}

// TestTransformRepublishVsNatsServer runs the transform scenario against
// leafbox and nats-server: the same stored subjects, the same republished
// subjects, bodies and headers, time stamps equal to the stored times,
// and the same refusals of bad transforms and republishes.
func TestTransformRepublishVsNatsServer(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	hub := leaftest.StartHub(t, leaftest.HubOptions{
		Config: fmt.Sprintf("jetstream {\n  store_dir: %q\n}", t.TempDir()),
	})
	ours := transformScenario(t, env.srv.ClientURL())
	theirs := transformScenario(t, hub.ClientURL())
	t.Logf("stored: %q", ours.stored)
	t.Logf("republished: %q", ours.republished)
	t.Logf("refused:\n%s", ours.configErr)
	if !slices.Equal(ours.stored, theirs.stored) {
		t.Errorf("stored:\nleafbox     %q\nnats-server %q", ours.stored, theirs.stored)
	}
	if !slices.Equal(ours.republished, theirs.republished) {
		t.Errorf("republished:\nleafbox     %q\nnats-server %q", ours.republished, theirs.republished)
	}
	if len(ours.stamps)+len(theirs.stamps) > 0 {
		t.Errorf("time stamps: leafbox %q, nats-server %q", ours.stamps, theirs.stamps)
	}
	if ours.configErr != theirs.configErr || !strings.Contains(ours.configErr, "10156") {
		t.Errorf("bad transforms:\nleafbox\n%snats-server\n%s", ours.configErr, theirs.configErr)
	}
}

// `nats stream add --transform-source … --republish-source …` creates a
// stream that stores under the transformed subject and republishes, and
// `nats stream edit` changes the transform.
func TestTransformRepublishNATSCLI(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	url := env.srv.ClientURL()
	out, err := runNATS(t, url, "stream", "add", "CLI", "--subjects", "cli.>", "--storage", "memory", "--defaults",
		"--transform-source", "cli.*.*", "--transform-destination", "c.{{wildcard(2)}}.{{partition(2,1)}}",
		"--republish-source", "c.>", "--republish-destination", "rp.c.>", "--republish-headers")
	if err != nil {
		t.Fatalf("nats stream add: %v\n%s", err, out)
	}
	rp, err := env.nc.SubscribeSync("rp.>")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.js.Publish(ctx, "cli.k.v", []byte("body")); err != nil {
		t.Fatal(err)
	}
	m, err := rp.NextMsg(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if m.Subject != "rp.c.v.0" || len(m.Data) != 0 || m.Header.Get("Nats-Msg-Size") != "4" || m.Header.Get("Nats-Subject") != "c.v.0" {
		t.Fatalf("republished %s %q %v", m.Subject, m.Data, m.Header)
	}
	out, err = runNATS(t, url, "stream", "edit", "CLI", "-f", "--transform-source", "cli.*.*", "--transform-destination", "e.$1")
	if err != nil {
		t.Fatalf("nats stream edit: %v\n%s", err, out)
	}
	if _, err := env.js.Publish(ctx, "cli.k.v", []byte("again")); err != nil {
		t.Fatal(err)
	}
	s, err := env.js.Stream(ctx, "CLI")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.GetMsg(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got.Subject != "e.k" {
		t.Fatalf("after edit stored under %q, want e.k", got.Subject)
	}
	// leafbox republishes before it acks, on the same connection: a
	// republish would be queued by now.
	if n, _, _ := rp.Pending(); n != 0 {
		t.Fatalf("e.k republished though the republish source is c.>")
	}
}

// TestRepublishHeaderBlock checks the republished header block byte for
// byte: the message's own headers, then nats-server's five (and
// Nats-Msg-Size with headers_only), each once, in its order; and that a
// file stream's transform and republish survive a restart.
func TestRepublishHeaderBlock(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	if _, err := env.js.CreateStream(ctx, njs.StreamConfig{Name: "H", Subjects: []string{"h.*"},
		SubjectTransform: &njs.SubjectTransformConfig{Source: "h.*", Destination: "hh.$1"},
		RePublish:        &njs.RePublish{Source: "hh.*", Destination: "rh.$1"}}); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 4)
	conn := env.srv.InProcess("")
	defer conn.Close()
	sub, err := conn.Subscribe("rh.*", "", func(m server.Msg) { got <- string(m.Subject) + " " + string(m.Header) + string(m.Data) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	publish := func(data string, hdr nats.Header) {
		t.Helper()
		if _, err := env.js.PublishMsg(ctx, &nats.Msg{Subject: "h.k", Header: hdr, Data: []byte(data)}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(seq, last int, own, data string) {
		t.Helper()
		s, err := env.js.Stream(ctx, "H")
		if err != nil {
			t.Fatal(err)
		}
		m, err := s.GetMsg(ctx, uint64(seq))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("rh.k NATS/1.0\r\n%sNats-Stream: H\r\nNats-Subject: hh.k\r\nNats-Sequence: %d\r\nNats-Time-Stamp: %s\r\nNats-Last-Sequence: %d\r\n\r\n%s",
			own, seq, m.Time.UTC().Format(time.RFC3339Nano), last, data)
		select {
		case g := <-got:
			if g != want {
				t.Fatalf("republished\n%q\nwant\n%q", g, want)
			}
		case <-ctx.Done():
			t.Fatal("not republished")
		}
	}
	publish("one", nats.Header{"X-A": []string{"a"}})
	check(1, 0, "X-A: a\r\n", "one")
	env.restart()
	publish("two", nil)
	check(2, 1, "", "two")
}

// TestRepublishKeyValue: a KV bucket created by nats.go with republish
// (its stream's republish from $KV.<bucket>.>) republishes each put.
func TestRepublishKeyValue(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	kv, err := env.js.CreateKeyValue(ctx, njs.KeyValueConfig{Bucket: "B",
		RePublish: &njs.RePublish{Source: ">", Destination: "kvrp.>"}})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := env.nc.SubscribeSync("kvrp.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{"v1", "v2"} {
		if _, err := kv.PutString(ctx, "key", v); err != nil {
			t.Fatal(err)
		}
		m, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m.Subject != "kvrp.$KV.B.key" || string(m.Data) != v || m.Header.Get("Nats-Subject") != "$KV.B.key" ||
			m.Header.Get("Nats-Sequence") != fmt.Sprint(i+1) || m.Header.Get("Nats-Last-Sequence") != fmt.Sprint(i) {
			t.Fatalf("put %d republished %s %q %v", i+1, m.Subject, m.Data, m.Header)
		}
	}
}

// TestRepublishCycle: two streams republishing into each other end the
// cycle instead of recursing (the broker delivers a republish on the
// publishing goroutine): a message a stream republished before is stored
// but not republished again.
func TestRepublishCycle(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	ctx := testCtx(t)
	for _, cfg := range []njs.StreamConfig{
		{Name: "A", Subjects: []string{"a.>"}, Storage: njs.MemoryStorage, RePublish: &njs.RePublish{Source: "a.>", Destination: "b.>"}},
		{Name: "B", Subjects: []string{"b.>"}, Storage: njs.MemoryStorage, RePublish: &njs.RePublish{Source: "b.>", Destination: "a.>"}},
	} {
		if _, err := env.js.CreateStream(ctx, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.js.Publish(ctx, "a.x", []byte("m")); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, name := range []string{"A", "B"} {
		s, err := env.js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		for seq := uint64(1); seq <= s.CachedInfo().State.LastSeq; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, name+" "+m.Subject+" "+strings.Join(m.Header.Values("Nats-Stream"), ","))
		}
	}
	want := []string{"A a.x ", "A a.x A,B", "B b.x A"}
	if !slices.Equal(got, want) {
		t.Fatalf("stored %q, want %q", got, want)
	}
}

// transformEdges are destination edge cases: out-of-range positions and
// sizes, exact multiples, empty pieces, an empty split delimiter,
// literal $ tokens, the partition shorthand with wildcards, '>' alone.
// Each is "dest subject" for source "e.*.*.>"; the stream's subject is
// "e.>".
var transformEdges = [][2]string{
	{"x.{{splitFromLeft(1,0)}}.{{splitFromLeft(2,3)}}.>", "e.abc.abc.t"},
	{"x.{{splitFromRight(1,5)}}.{{splitFromRight(2,1)}}.>", "e.abc.abc.t"},
	{"x.{{sliceFromLeft(1,3)}}.{{sliceFromLeft(2,1)}}.>", "e.abcdef.abc.t"},
	{"x.{{sliceFromRight(1,3)}}.{{sliceFromRight(2,4)}}.>", "e.abcdefg.abc.t"},
	{"x.{{left(1,0)}}.{{left(2,9)}}.{{right(1,-1)}}.>", "e.abc.abc.t"},
	{"x.{{split(1,)}}.>", "e.héllo.z.t"},
	{"x.{{split(1,--)}}.{{split(2,a)}}.>", "e.a--b---c.aaa1a.t"},
	{"x.$cash.$1.{{ wildcard( 2 ) }}.>", "e.p.q.r.s"},
	{"x.{{partition(7)}}.{{partition(9,2,1)}}.>", "e.key.other.t"},
	{"{{wildcard(2)}}.>", "e.p.q.r"},
	{">", "e.p.q.r"},
}

// TestTransformEdgesVsNatsServer stores one message through each edge
// transform on leafbox and on nats-server and compares the subjects.
func TestTransformEdgesVsNatsServer(t *testing.T) {
	t.Parallel()
	env := newTestEnv(t, Config{})
	hub := leaftest.StartHub(t, leaftest.HubOptions{
		Config: fmt.Sprintf("jetstream {\n  store_dir: %q\n}", t.TempDir()),
	})
	stored := func(url string) []string {
		ctx := testCtx(t)
		nc, err := nats.Connect(url, nats.NoReconnect())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js, err := njs.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i, c := range transformEdges {
			name := fmt.Sprintf("E%d", i)
			s, err := js.CreateStream(ctx, njs.StreamConfig{Name: name, Subjects: []string{"e.>"}, Storage: njs.MemoryStorage,
				SubjectTransform: &njs.SubjectTransformConfig{Source: "e.*.*.>", Destination: c[0]}})
			if err != nil {
				out = append(out, fmt.Sprintf("%s: %v", c[0], err))
				continue
			}
			if _, err := js.Publish(ctx, c[1], nil); err != nil {
				out = append(out, fmt.Sprintf("%s on %s: publish: %v", c[0], c[1], err))
			} else if m, err := s.GetMsg(ctx, 1); err != nil {
				out = append(out, fmt.Sprintf("%s on %s: get: %v", c[0], c[1], err))
			} else {
				out = append(out, fmt.Sprintf("%s on %s: %s", c[0], c[1], m.Subject))
			}
			if err := js.DeleteStream(ctx, name); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	ours, theirs := stored(env.srv.ClientURL()), stored(hub.ClientURL())
	// The one difference: a result with an empty token, which
	// nats-server stores and leafbox refuses.
	const emptyToken = `x.{{split(1,--)}}.{{split(2,a)}}.> on e.a--b---c.aaa1a.t: `
	for i := range ours {
		t.Log(ours[i])
		if strings.HasPrefix(ours[i], emptyToken) {
			if want := `publish: nats: nats: API error: code=400 err_code=10156 description=stream transform: subject "e.a--b---c.aaa1a.t" maps to "x.a.b.-c..1.t", not a valid subject`; ours[i] != emptyToken+want ||
				theirs[i] != emptyToken+"x.a.b.-c..1.t" {
				t.Errorf("empty token:\nleafbox     %s\nnats-server %s", ours[i], theirs[i])
			}
			continue
		}
		if ours[i] != theirs[i] {
			t.Errorf("leafbox     %s\nnats-server %s", ours[i], theirs[i])
		}
	}
}
