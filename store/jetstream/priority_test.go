package jetstream

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/tooltest"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// priorityServers returns leafbox and a real nats-server with JetStream,
// by name, for the scenarios that compare them.
func priorityServers(t *testing.T) []struct{ name, url string } {
	t.Helper()
	env := newTestEnv(t, Config{})
	hub := leaftest.StartHub(t, leaftest.HubOptions{
		Config: fmt.Sprintf("jetstream {\n  store_dir: %q\n}", t.TempDir()),
	})
	return []struct{ name, url string }{{"leafbox", env.srv.ClientURL()}, {"nats-server", hub.ClientURL()}}
}

// connectJS connects a nats.go client to url.
func connectJS(t *testing.T, url string) (*nats.Conn, njs.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.NoReconnect())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := njs.New(nc)
	require.NoError(t, err)
	return nc, js
}

// awaitInfo polls the consumer's info until cond holds.
func awaitInfo(t *testing.T, c njs.Consumer, what string, cond func(*njs.ConsumerInfo) bool) *njs.ConsumerInfo {
	t.Helper()
	ctx := testCtx(t)
	for {
		info, err := c.Info(ctx)
		require.NoError(t, err)
		if cond(info) {
			return info
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: last info %+v", what, info)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// pinAdvisories records the pinned and unpinned advisories of a consumer.
type pinAdvisories struct {
	ch chan *nats.Msg
}

// watchPins subscribes to both advisories of consumer, in the order they
// arrive.
func watchPins(t *testing.T, nc *nats.Conn, stream, consumer string) *pinAdvisories {
	t.Helper()
	p := &pinAdvisories{ch: make(chan *nats.Msg, 64)}
	for _, kind := range []string{"PINNED", "UNPINNED"} {
		_, err := nc.ChanSubscribe("$JS.EVENT.ADVISORY.CONSUMER."+kind+"."+stream+"."+consumer, p.ch)
		require.NoError(t, err)
	}
	require.NoError(t, nc.Flush())
	return p
}

// next returns the next advisory as "PINNED <group> <fields>" or
// "UNPINNED <group> <reason> <fields>", and the pinned ID it names.
func (p *pinAdvisories) next(t *testing.T) (string, string) {
	t.Helper()
	var m *nats.Msg
	select {
	case m = <-p.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no pin advisory")
	}
	var fields map[string]any
	require.NoError(t, json.Unmarshal(m.Data, &fields))
	a := recordedAdvisory{subject: m.Subject, fields: fields}
	kind := strings.TrimPrefix(m.Subject, "$JS.EVENT.ADVISORY.CONSUMER.")
	kind = kind[:strings.IndexByte(kind, '.')]
	desc := fmt.Sprintf("%s %v %v", kind, fields["group"], fields["type"])
	if kind == "UNPINNED" {
		desc += fmt.Sprintf(" %v", fields["reason"])
	}
	id, _ := fields["pinned_id"].(string)
	return desc + " [" + a.fieldSet() + "]", id
}

// received is one delivery of a pinned scenario.
type received struct {
	who string
	seq uint64
	pin string
}

// pinnedConsumeScenario: two nats.go clients Consume the same
// pinned_client consumer. The first to get a message is pinned and gets
// everything, the second none, and the consumer info shows the pin
// (the ID of the deliveries' Nats-Pin-Id); after CONSUMER.UNPIN the other
// client is pinned and gets everything. It returns who got each message
// and the advisories.
func pinnedConsumeScenario(t *testing.T, url string) []string {
	ctx := testCtx(t)
	nc, js := connectJS(t, url)
	s, err := js.CreateStream(ctx, njs.StreamConfig{Name: "PIN", Subjects: []string{"pin.>"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	_, err = s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{
		Durable: "W", AckPolicy: njs.AckExplicitPolicy,
		PriorityPolicy: njs.PriorityPolicyPinned, PriorityGroups: []string{"jobs"},
	})
	require.NoError(t, err)
	advs := watchPins(t, nc, "PIN", "W")

	var mu sync.Mutex
	var got []received
	arrived := make(chan struct{}, 100)
	consume := func(who string) njs.ConsumeContext {
		_, cjs := connectJS(t, url)
		c, err := cjs.Consumer(ctx, "PIN", "W")
		require.NoError(t, err)
		cc, err := c.Consume(func(m njs.Msg) {
			meta, err := m.Metadata()
			if err != nil {
				t.Error(err)
				return
			}
			_ = m.Ack()
			mu.Lock()
			got = append(got, received{who, meta.Sequence.Stream, m.Headers().Get("Nats-Pin-Id")})
			mu.Unlock()
			arrived <- struct{}{}
		}, njs.PullPriorityGroup("jobs"))
		require.NoError(t, err)
		t.Cleanup(cc.Stop)
		return cc
	}
	await := func(n int) {
		t.Helper()
		for range n {
			select {
			case <-arrived:
			case <-ctx.Done():
				t.Fatalf("%s: waiting for %d deliveries, have %v", url, n, got)
			}
		}
	}
	c, err := js.Consumer(ctx, "PIN", "W")
	require.NoError(t, err)

	consume("A")
	awaitInfo(t, c, "A's request", func(i *njs.ConsumerInfo) bool { return i.NumWaiting == 1 })
	publishN(t, js, "pin.x", 3)
	await(3)
	consume("B")
	awaitInfo(t, c, "B's request", func(i *njs.ConsumerInfo) bool { return i.NumWaiting == 2 })
	publishN(t, js, "pin.x", 3)
	await(3)
	var out []string
	info := awaitInfo(t, c, "acks", func(i *njs.ConsumerInfo) bool { return i.NumAckPending == 0 })
	mu.Lock()
	pinA := got[0].pin
	mu.Unlock()
	if len(info.PriorityGroups) != 1 || info.PriorityGroups[0].PinnedClientID != pinA || pinA == "" ||
		info.PriorityGroups[0].Group != "jobs" || info.PriorityGroups[0].PinnedTS.IsZero() {
		t.Errorf("%s: priority groups %+v, A pinned as %q", url, info.PriorityGroups, pinA)
	}
	adv, id := advs.next(t)
	out = append(out, adv)
	if id != pinA {
		t.Errorf("%s: pinned advisory for %q, deliveries carry %q", url, id, pinA)
	}

	require.NoError(t, s.UnpinConsumer(ctx, "W", "jobs"))
	adv, _ = advs.next(t)
	out = append(out, adv)
	publishN(t, js, "pin.x", 3)
	await(3)
	adv, pinB := advs.next(t)
	out = append(out, adv)
	info, err = c.Info(ctx)
	require.NoError(t, err)
	if pinB == pinA || info.PriorityGroups[0].PinnedClientID != pinB {
		t.Errorf("%s: after unpin pinned %q (was %q), info %+v", url, pinB, pinA, info.PriorityGroups)
	}
	mu.Lock()
	defer mu.Unlock()
	var who strings.Builder
	for i, r := range got {
		fmt.Fprintf(&who, "%s%d ", r.who, r.seq)
		want := pinA
		if i >= 6 {
			want = pinB
		}
		if r.pin != want {
			t.Errorf("%s: delivery %d carries pin %q, want %q", url, i, r.pin, want)
		}
	}
	return append(out, who.String())
}

// TestPriorityPinnedConsumeVsNatsServer runs pinnedConsumeScenario on
// leafbox and nats-server: the same client gets the same messages, the
// same advisories are sent.
func TestPriorityPinnedConsumeVsNatsServer(t *testing.T) {
	t.Parallel()
	var want []string
	for _, srv := range priorityServers(t) {
		got := pinnedConsumeScenario(t, srv.url)
		t.Logf("%s: %q", srv.name, got)
		if want == nil {
			want = got
			continue
		}
		require.Equal(t, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	require.Equal(t, want[len(want)-1], "A1 A2 A3 A4 A5 A6 B7 B8 B9 ")
}

// fetchOne fetches up to one message within wait and returns its stream
// sequence and pin (0 and "" for none).
func fetchOne(t *testing.T, c njs.Consumer, wait time.Duration, opts ...njs.FetchOpt) (uint64, string) {
	t.Helper()
	b, err := c.Fetch(1, append([]njs.FetchOpt{njs.FetchMaxWait(wait)}, opts...)...)
	require.NoError(t, err)
	var seq uint64
	var pin string
	for m := range b.Messages() {
		meta, err := m.Metadata()
		require.NoError(t, err)
		seq, pin = meta.Sequence.Stream, m.Headers().Get("Nats-Pin-Id")
		require.NoError(t, m.Ack())
	}
	if err := b.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("fetch: %v", err)
	}
	return seq, pin
}

// pinTimeoutScenario: client A is pinned by a fetch; client B's waiting
// request is passed over while A fetches again (which renews the pin),
// and B gets the next message only once A sent nothing for
// priority_timeout, with a new pin. It returns the advisories, and
// checks the timing on its own.
func pinTimeoutScenario(t *testing.T, url string) []string {
	const ttl = 2 * time.Second
	ctx := testCtx(t)
	nc, js := connectJS(t, url)
	s, err := js.CreateStream(ctx, njs.StreamConfig{Name: "PT", Subjects: []string{"pt"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	_, err = s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{
		Durable: "T", AckPolicy: njs.AckExplicitPolicy, PinnedTTL: ttl,
		PriorityPolicy: njs.PriorityPolicyPinned, PriorityGroups: []string{"g"},
	})
	require.NoError(t, err)
	advs := watchPins(t, nc, "PT", "T")
	handle := func() njs.Consumer {
		_, cjs := connectJS(t, url)
		c, err := cjs.Consumer(ctx, "PT", "T")
		require.NoError(t, err)
		return c
	}
	a, b := handle(), handle()
	publishN(t, js, "pt", 1)
	seq, pinA := fetchOne(t, a, 5*time.Second, njs.FetchPriorityGroup("g"))
	require.Equal(t, seq, uint64(1))

	type result struct {
		seq uint64
		pin string
		at  time.Time
	}
	bGot := make(chan result, 1)
	go func() {
		seq, pin := fetchOne(t, b, 15*time.Second, njs.FetchPriorityGroup("g"))
		bGot <- result{seq, pin, time.Now()}
	}()
	awaitInfo(t, a, "B's request", func(i *njs.ConsumerInfo) bool { return i.NumWaiting == 1 })
	// A's second fetch carries its pin: B, waiting first, is passed over.
	renewed := time.Now()
	aGot := make(chan uint64, 1)
	go func() {
		seq, _ := fetchOne(t, a, 5*time.Second, njs.FetchPriorityGroup("g"))
		aGot <- seq
	}()
	awaitInfo(t, a, "A's second request", func(i *njs.ConsumerInfo) bool { return i.NumWaiting == 2 })
	publishN(t, js, "pt", 1)
	require.Equal(t, <-aGot, uint64(2))
	publishN(t, js, "pt", 1)
	r := <-bGot
	require.Equal(t, r.seq, uint64(3))
	if took := r.at.Sub(renewed); took < ttl || took > ttl+5*time.Second {
		t.Errorf("%s: B got its message %v after A's last request, priority_timeout %v", url, took, ttl)
	}
	if r.pin == "" || r.pin == pinA {
		t.Errorf("%s: B pinned as %q, A was %q", url, r.pin, pinA)
	}
	var out []string
	for _, want := range []string{pinA, "", r.pin} {
		adv, id := advs.next(t)
		if id != want {
			t.Errorf("%s: advisory %s names %q, want %q", url, adv, id, want)
		}
		out = append(out, adv)
	}
	return out
}

// TestPriorityPinTimeoutVsNatsServer runs pinTimeoutScenario on leafbox
// and nats-server.
func TestPriorityPinTimeoutVsNatsServer(t *testing.T) {
	t.Parallel()
	var want []string
	for _, srv := range priorityServers(t) {
		got := pinTimeoutScenario(t, srv.url)
		t.Logf("%s: %q", srv.name, got)
		if want == nil {
			want = got
			continue
		}
		require.Equal(t, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	require.Equal(t, strings.Contains(want[1], "UNPINNED g io.nats.jetstream.advisory.v1.consumer_group_unpinned timeout"), true)
}

// overflowScenario: on an overflow consumer, a request with min_pending
// or min_ack_pending is served only while the consumer has that many
// messages pending or unacknowledged; a request without them is served
// as usual. It returns the stream sequences each fetch got (0: none).
func overflowScenario(t *testing.T, url string) []uint64 {
	ctx := testCtx(t)
	_, js := connectJS(t, url)
	s, err := js.CreateStream(ctx, njs.StreamConfig{Name: "OV", Subjects: []string{"ov"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	c, err := s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{
		Durable: "O", AckPolicy: njs.AckExplicitPolicy,
		PriorityPolicy: njs.PriorityPolicyOverflow, PriorityGroups: []string{"g"},
	})
	require.NoError(t, err)
	fetch := func(n int, wait time.Duration, opts ...njs.FetchOpt) []uint64 {
		b, err := c.Fetch(n, append([]njs.FetchOpt{njs.FetchMaxWait(wait), njs.FetchPriorityGroup("g")}, opts...)...)
		require.NoError(t, err)
		var seqs []uint64
		for m := range b.Messages() {
			meta, err := m.Metadata()
			require.NoError(t, err)
			seqs = append(seqs, meta.Sequence.Stream) // not acked
		}
		if len(seqs) == 0 {
			seqs = []uint64{0}
		}
		return seqs
	}
	var out []uint64
	publishN(t, js, "ov", 3)
	out = append(out, fetch(1, time.Second, njs.FetchMinPending(5))...) // 3 pending: held
	publishN(t, js, "ov", 3)
	out = append(out, fetch(1, 5*time.Second, njs.FetchMinPending(5))...)    // 6: served
	out = append(out, fetch(1, time.Second, njs.FetchMinAckPending(3))...)   // 1 unacked: held
	out = append(out, fetch(2, 5*time.Second)...)                            // no minimum
	out = append(out, fetch(1, 5*time.Second, njs.FetchMinAckPending(3))...) // 3 unacked: served
	out = append(out, fetch(1, time.Second, njs.FetchMinPending(3))...)      // 2 pending: held
	return out
}

// TestPriorityOverflowVsNatsServer runs overflowScenario on leafbox and
// nats-server.
func TestPriorityOverflowVsNatsServer(t *testing.T) {
	t.Parallel()
	for _, srv := range priorityServers(t) {
		got := overflowScenario(t, srv.url)
		require.Equal(t, fmt.Sprint(got), "[0 1 0 2 3 4 0]")
	}
}

// prioritizedScenario: on a prioritized consumer a request of priority 0
// is served before an earlier one of priority 5. It returns the
// sequences each request got.
func prioritizedScenario(t *testing.T, url string) string {
	ctx := testCtx(t)
	_, js := connectJS(t, url)
	s, err := js.CreateStream(ctx, njs.StreamConfig{Name: "PR", Subjects: []string{"pr"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	c, err := s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{
		Durable: "P", AckPolicy: njs.AckExplicitPolicy,
		PriorityPolicy: njs.PriorityPolicyPrioritized, PriorityGroups: []string{"g"},
	})
	require.NoError(t, err)
	fetch := func(n int, prio uint8) njs.MessageBatch {
		b, err := c.Fetch(n, njs.FetchMaxWait(5*time.Second), njs.FetchPriorityGroup("g"), njs.FetchPrioritized(prio))
		require.NoError(t, err)
		return b
	}
	low := fetch(1, 5)
	awaitInfo(t, c, "the priority 5 request", func(i *njs.ConsumerInfo) bool { return i.NumWaiting == 1 })
	high := fetch(3, 0)
	awaitInfo(t, c, "the priority 0 request", func(i *njs.ConsumerInfo) bool { return i.NumWaiting == 2 })
	publishN(t, js, "pr", 4)
	seqs := func(b njs.MessageBatch) []uint64 {
		var out []uint64
		for m := range b.Messages() {
			meta, err := m.Metadata()
			require.NoError(t, err)
			out = append(out, meta.Sequence.Stream)
		}
		return out
	}
	return fmt.Sprintf("priority 0: %v, priority 5: %v", seqs(high), seqs(low))
}

// TestPriorityPrioritizedVsNatsServer runs prioritizedScenario on
// leafbox and nats-server.
func TestPriorityPrioritizedVsNatsServer(t *testing.T) {
	t.Parallel()
	for _, srv := range priorityServers(t) {
		require.Equal(t, prioritizedScenario(t, srv.url), "priority 0: [1 2 3], priority 5: [4]")
	}
}

// priorityErrorsScenario collects the answers to wrong priority-group
// requests: pull statuses, unpin and create errors, and an overflow
// consumer's priority_groups in its info.
func priorityErrorsScenario(t *testing.T, url string) []string {
	ctx := testCtx(t)
	nc, js := connectJS(t, url)
	s, err := js.CreateStream(ctx, njs.StreamConfig{Name: "PE", Subjects: []string{"pe"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	pinned, err := s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "EP", AckPolicy: njs.AckExplicitPolicy,
		PriorityPolicy: njs.PriorityPolicyPinned, PriorityGroups: []string{"g"}})
	require.NoError(t, err)
	_, err = s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "EO", AckPolicy: njs.AckExplicitPolicy,
		PriorityPolicy: njs.PriorityPolicyOverflow, PriorityGroups: []string{"g"}})
	require.NoError(t, err)
	var out []string
	pull := func(consumer, body string) {
		t.Helper()
		m, err := nc.Request("$JS.API.CONSUMER.MSG.NEXT.PE."+consumer, []byte(body), 5*time.Second)
		require.NoError(t, err)
		out = append(out, fmt.Sprintf("pull %s %s: %s %s %s", consumer, body, m.Header.Get("Status"), m.Header.Get("Description"),
			m.Header.Get("Nats-Pending-Messages")))
	}
	pull("EP", `{"batch":1,"group":"x"}`)
	pull("EP", `{"batch":1}`)
	pull("EP", `{"batch":1,"group":"g","min_pending":1}`)
	pull("EP", `{"batch":1,"group":"g","priority":10}`)
	pull("EO", `{"batch":1,"group":"g","id":"x"}`)
	pull("EO", `{"batch":1,"group":"g","min_ack_pending":-1,"priority":-1}`)
	publishN(t, js, "pe", 1)
	if seq, _ := fetchOne(t, pinned, 5*time.Second, njs.FetchPriorityGroup("g")); seq != 1 {
		t.Fatalf("%s: pinning fetch got %d", url, seq)
	}
	pull("EP", `{"batch":1,"group":"g","id":"bogus","expires":1000000000}`)
	// A request pinned for a message it cannot take gives the pin back.
	_, err = s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "EB", AckPolicy: njs.AckExplicitPolicy,
		PriorityPolicy: njs.PriorityPolicyPinned, PriorityGroups: []string{"g"}})
	require.NoError(t, err)
	pull("EB", `{"batch":1,"group":"g","max_bytes":5,"expires":5000000000}`)
	m, err := nc.Request("$JS.API.CONSUMER.INFO.PE.EB", nil, 5*time.Second)
	require.NoError(t, err)
	var pinInfo struct {
		PriorityGroups json.RawMessage `json:"priority_groups"`
	}
	require.NoError(t, json.Unmarshal(m.Data, &pinInfo))
	out = append(out, fmt.Sprintf("after max_bytes: priority_groups %s", pinInfo.PriorityGroups))

	api := func(subj, body string) {
		t.Helper()
		m, err := nc.Request("$JS.API."+subj, []byte(body), 5*time.Second)
		require.NoError(t, err)
		var resp struct {
			Type  string         `json:"type"`
			Error map[string]any `json:"error"`
		}
		require.NoError(t, json.Unmarshal(m.Data, &resp))
		out = append(out, fmt.Sprintf("%s %s: %s %v", subj, body, resp.Type, resp.Error))
	}
	api("CONSUMER.UNPIN.PE.EP", `{}`)
	api("CONSUMER.UNPIN.PE.EP", `{"group":"a.b"}`)
	api("CONSUMER.UNPIN.PE.EP", `{"group":"h"}`)
	api("CONSUMER.UNPIN.PE.NOPE", `{"group":"g"}`)
	api("CONSUMER.UNPIN.NOPE.EP", `{"group":"g"}`)
	api("CONSUMER.UNPIN.PE.EP", `{"group":"g"}`)
	api("CONSUMER.UNPIN.PE.EO", `{"group":"g"}`)
	// Nothing is pinned now: a request still carrying the old pin is
	// ended when a message comes.
	publishN(t, js, "pe", 1)
	pull("EP", `{"batch":2,"group":"g","id":"old","expires":5000000000}`)
	for _, cfg := range []string{
		`{"durable_name":"X","ack_policy":"explicit","deliver_subject":"d","priority_policy":"overflow","priority_groups":["g"]}`,
		`{"durable_name":"X","ack_policy":"explicit","priority_policy":"pinned_client"}`,
		`{"durable_name":"X","ack_policy":"explicit","priority_groups":["g"]}`,
		`{"durable_name":"X","ack_policy":"explicit","priority_timeout":1000}`,
		`{"durable_name":"X","ack_policy":"explicit","priority_policy":"overflow","priority_groups":["a.b"]}`,
		`{"durable_name":"X","ack_policy":"explicit","priority_policy":"overflow","priority_groups":[""]}`,
	} {
		api("CONSUMER.CREATE.PE.X", `{"stream_name":"PE","config":`+cfg+`}`)
	}

	m, err = nc.Request("$JS.API.CONSUMER.INFO.PE.EO", nil, 5*time.Second)
	require.NoError(t, err)
	var info struct {
		Config struct {
			PinnedTTL any `json:"priority_timeout"`
		} `json:"config"`
		PriorityGroups json.RawMessage `json:"priority_groups"`
	}
	require.NoError(t, json.Unmarshal(m.Data, &info))
	out = append(out, fmt.Sprintf("overflow info: priority_groups %s, priority_timeout %v", info.PriorityGroups, info.Config.PinnedTTL))
	m, err = nc.Request("$JS.API.CONSUMER.INFO.PE.EP", nil, 5*time.Second)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(m.Data, &info))
	out = append(out, fmt.Sprintf("pinned info after unpin: priority_groups %s, priority_timeout %v", info.PriorityGroups, info.Config.PinnedTTL))
	return out
}

// TestPriorityErrorsVsNatsServer requires the same answers from leafbox
// and nats-server to wrong priority-group requests.
func TestPriorityErrorsVsNatsServer(t *testing.T) {
	t.Parallel()
	var want []string
	for _, srv := range priorityServers(t) {
		got := priorityErrorsScenario(t, srv.url)
		if want == nil {
			want = got
			t.Logf("%s:\n%s", srv.name, strings.Join(got, "\n"))
			continue
		}
		require.Equal(t, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestPriorityCLIVsNatsServer drives a pinned_client consumer with the
// nats CLI, on leafbox and on nats-server: `nats consumer add
// --pinned-groups` (natscli v0.5.0, which asks for API level 2 first)
// makes it, `nats consumer info` shows the client a fetch pinned, and
// `nats consumer unpin` removes the pin.
func TestPriorityCLIVsNatsServer(t *testing.T) {
	t.Parallel()
	cli := tooltest.NatsCLI(t)
	for _, srv := range priorityServers(t) {
		ctx := testCtx(t)
		_, js := connectJS(t, srv.url)
		home := t.TempDir()
		nats := func(args ...string) string {
			t.Helper()
			for try := 1; ; try++ {
				cmd := exec.Command(cli, append([]string{"--server", srv.url, "--timeout", "20s"}, args...)...)
				cmd.Env = append(os.Environ(), "HOME="+home)
				out, err := cmd.CombinedOutput()
				if err == nil {
					return string(out)
				}
				// A loaded machine can time out the CLI's connection
				// setup before any request is made: that is retried.
				if try < 3 && strings.Contains(string(out), "setup failed") {
					t.Logf("%s: nats %v: %s", srv.name, args, out)
					continue
				}
				t.Fatalf("%s: nats %v: %v\n%s", srv.name, args, err, out)
			}
		}
		nats("stream", "add", "CLI", "--subjects", "cli.>", "--storage", "memory", "--defaults")
		nats("consumer", "add", "CLI", "W", "--pull", "--ack", "explicit", "--pinned-groups", "jobs", "--pinned-ttl", "1m", "--defaults")
		c, err := js.Consumer(ctx, "CLI", "W")
		require.NoError(t, err)
		cfg := c.CachedInfo().Config
		if cfg.PriorityPolicy != njs.PriorityPolicyPinned || fmt.Sprint(cfg.PriorityGroups) != "[jobs]" || cfg.PinnedTTL != time.Minute {
			t.Fatalf("%s: created %+v", srv.name, cfg)
		}
		publishN(t, js, "cli.x", 1)
		seq, pin := fetchOne(t, c, 5*time.Second, njs.FetchPriorityGroup("jobs"))
		require.Equal(t, seq, uint64(1))
		if out := nats("consumer", "info", "CLI", "W"); !strings.Contains(out, "jobs: pinned "+pin+" at ") {
			t.Errorf("%s: consumer info does not show pin %s:\n%s", srv.name, pin, out)
		}
		out := nats("consumer", "unpin", "CLI", "W", "jobs", "--force")
		require.Equal(t, strings.TrimSpace(out), "Unpinned client "+pin+" from Priority Group CLI > W > jobs")
		if out := nats("consumer", "info", "CLI", "W"); !strings.Contains(out, "jobs: No client") {
			t.Errorf("%s: consumer info after unpin:\n%s", srv.name, out)
		}
	}
}

// overflowConsumeScenario: nats.go Consume on overflow consumers. A
// standby with PullMinPending(5) takes messages only while 5 or more are
// pending (counting the one placed), then leaves the rest to a primary
// without a minimum; a standby with PullMinAckPending(2) takes messages
// only while the primary holds 2 unacknowledged. It returns who got
// each message, by consumer sequence, per consumer.
func overflowConsumeScenario(t *testing.T, url string) []string {
	ctx := testCtx(t)
	_, js := connectJS(t, url)
	s, err := js.CreateStream(ctx, njs.StreamConfig{Name: "OC", Subjects: []string{"oc.>"}, Storage: njs.MemoryStorage})
	require.NoError(t, err)
	var out []string
	for _, tc := range []struct {
		name    string
		standby njs.PullConsumeOpt
		ack     bool // the primary acks
	}{
		{"min_pending", njs.PullMinPending(5), true},
		{"min_ack_pending", njs.PullMinAckPending(2), false},
	} {
		subj := "oc." + tc.name
		c, err := s.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{
			Durable: strings.ReplaceAll(tc.name, "_", "-"), FilterSubject: subj, AckPolicy: njs.AckExplicitPolicy,
			PriorityPolicy: njs.PriorityPolicyOverflow, PriorityGroups: []string{"g"},
		})
		require.NoError(t, err)
		var mu sync.Mutex
		var got []string
		arrived := make(chan struct{}, 16)
		consume := func(who string, ack bool, opts ...njs.PullConsumeOpt) {
			_, cjs := connectJS(t, url)
			cc, err := cjs.Consumer(ctx, "OC", c.CachedInfo().Name)
			require.NoError(t, err)
			ctx, err := cc.Consume(func(m njs.Msg) {
				meta, err := m.Metadata()
				if err != nil {
					t.Error(err)
					return
				}
				if ack {
					_ = m.Ack()
				}
				mu.Lock()
				got = append(got, fmt.Sprintf("%s%d", who, meta.Sequence.Consumer))
				mu.Unlock()
				arrived <- struct{}{}
			}, append(opts, njs.PullPriorityGroup("g"))...)
			require.NoError(t, err)
			t.Cleanup(ctx.Stop)
		}
		await := func(n int) {
			t.Helper()
			for range n {
				select {
				case <-arrived:
				case <-ctx.Done():
					t.Fatalf("%s %s: waiting for %d deliveries, have %v", url, tc.name, n, got)
				}
			}
		}
		if tc.name == "min_pending" {
			// All stored before the standby asks, so the count it
			// sees does not depend on when the publishes arrive.
			publishN(t, js, subj, 6)
			consume("S", true, tc.standby)
			await(2) // 6, then 5 pending
			awaitInfo(t, c, "the standby's request", func(i *njs.ConsumerInfo) bool { return i.NumWaiting == 1 })
			consume("P", tc.ack)
			await(4)
		} else {
			consume("S", true, tc.standby)
			awaitInfo(t, c, "the standby's request", func(i *njs.ConsumerInfo) bool { return i.NumWaiting == 1 })
			consume("P", tc.ack)
			awaitInfo(t, c, "the primary's request", func(i *njs.ConsumerInfo) bool { return i.NumWaiting == 2 })
			publishN(t, js, subj, 6)
			await(6)
		}
		mu.Lock()
		// By sequence: the two clients' arrivals interleave freely.
		slices.SortFunc(got, func(a, b string) int {
			return cmp.Compare(seqOf(a), seqOf(b))
		})
		out = append(out, tc.name+": "+strings.Join(got, " "))
		mu.Unlock()
	}
	return out
}

// seqOf is the sequence of a delivery noted as "<who><seq>".
func seqOf(d string) int {
	n, _ := strconv.Atoi(d[1:])
	return n
}

// TestPriorityOverflowConsumeVsNatsServer runs overflowConsumeScenario
// on leafbox and nats-server.
func TestPriorityOverflowConsumeVsNatsServer(t *testing.T) {
	t.Parallel()
	for _, srv := range priorityServers(t) {
		got := overflowConsumeScenario(t, srv.url)
		t.Logf("%s: %q", srv.name, got)
		require.Equal(t, strings.Join(got, "\n"), "min_pending: S1 S2 P3 P4 P5 P6\nmin_ack_pending: P1 P2 S3 P4 S5 P6")
	}
}
