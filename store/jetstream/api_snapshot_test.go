package jetstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	njs "github.com/nats-io/nats.go/jetstream"
)

// snapshotMeta is what a snapshot response carries, as jsm.go keeps it
// in backup.json.
type snapshotMeta struct {
	Type  string `json:"type"`
	Error *struct {
		Code, ErrCode int
		Description   string
	} `json:"error"`
	Config json.RawMessage `json:"config"`
	State  json.RawMessage `json:"state"`
}

// takeSnapshot requests a snapshot over the raw API, answering every
// chunk as jsm.go does, and returns the response and the archive.
func takeSnapshot(t *testing.T, nc *nats.Conn, stream string, chunk int) (snapshotMeta, []byte) {
	t.Helper()
	inbox := nats.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	req, _ := json.Marshal(map[string]any{"deliver_subject": inbox, "chunk_size": chunk})
	msg, err := nc.Request("$JS.API.STREAM.SNAPSHOT."+stream, req, 5*time.Second)
	if err != nil {
		t.Fatalf("snapshot request: %v", err)
	}
	var meta snapshotMeta
	if err := json.Unmarshal(msg.Data, &meta); err != nil || meta.Error != nil {
		t.Fatalf("snapshot response %s: %v", msg.Data, err)
	}
	var buf bytes.Buffer
	for {
		m, err := sub.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("snapshot chunk: %v", err)
		}
		if len(m.Data) == 0 {
			if st := m.Header.Get("Status"); st != "" && st != "204" {
				t.Fatalf("snapshot ended with %s %s", st, m.Header.Get("Description"))
			}
			return meta, buf.Bytes()
		}
		buf.Write(m.Data)
		if m.Reply != "" {
			if err := m.Respond(nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// restoreSnapshot sends a restore over the raw API as jsm.go does and
// returns the final response's error, if any ("" on success).
func restoreSnapshot(t *testing.T, nc *nats.Conn, stream string, cfg json.RawMessage, data []byte) string {
	t.Helper()
	req, _ := json.Marshal(map[string]any{"config": cfg, "state": map[string]any{}})
	msg, err := nc.Request("$JS.API.STREAM.RESTORE."+stream, req, 5*time.Second)
	if err != nil {
		t.Fatalf("restore request: %v", err)
	}
	var resp struct {
		Error          *struct{ Description string } `json:"error"`
		DeliverSubject string                        `json:"deliver_subject"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Error != nil {
		return resp.Error.Description
	}
	for len(data) > 0 {
		n := min(len(data), 64<<10)
		r, err := nc.Request(resp.DeliverSubject, data[:n], 5*time.Second)
		if err != nil {
			t.Fatalf("restore chunk: %v", err)
		}
		if len(r.Data) > 0 {
			return errorDescription(t, r.Data)
		}
		data = data[n:]
	}
	r, err := nc.Request(resp.DeliverSubject, nil, 10*time.Second)
	if err != nil {
		t.Fatalf("restore end: %v", err)
	}
	return errorDescription(t, r.Data)
}

// errorDescription returns a stream_create_response's error description.
func errorDescription(t *testing.T, b []byte) string {
	t.Helper()
	var r struct {
		Type  string                        `json:"type"`
		Error *struct{ Description string } `json:"error"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("restore answer %q: %v", b, err)
	}
	if r.Type != "io.nats.jetstream.api.v1.stream_create_response" {
		t.Fatalf("restore answer type %q", r.Type)
	}
	if r.Error != nil {
		return r.Error.Description
	}
	return ""
}

// fillStream makes a stream with headers, deleted messages (first and
// interior), a durable with acked and pending messages, and returns it.
func fillStream(t *testing.T, js njs.JetStream, name string) {
	t.Helper()
	ctx := testCtx(t)
	st, err := js.CreateStream(ctx, njs.StreamConfig{Name: name, Subjects: []string{name + ".>"}, Storage: njs.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 40; i++ {
		m := nats.NewMsg(fmt.Sprintf("%s.s%d", name, i%3))
		m.Data = bytes.Repeat([]byte{byte(i)}, i*97)
		if i%2 == 0 {
			m.Header.Set("X-N", fmt.Sprint(i))
			m.Header.Set("Nats-Msg-Id", fmt.Sprintf("id-%d", i))
		}
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, seq := range []uint64{1, 2, 7, 20, 21, 40} {
		if err := st.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := st.CreateOrUpdateConsumer(ctx, njs.ConsumerConfig{Durable: "worker", AckPolicy: njs.AckExplicitPolicy, AckWait: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(10, njs.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for m := range batch.Messages() {
		if i < 6 {
			if err := m.DoubleAck(ctx); err != nil {
				t.Fatal(err)
			}
		}
		i++
	}
	if i != 10 {
		t.Fatalf("fetched %d, want 10", i)
	}
}

// sameStreams checks that b holds a's messages at the same sequences and
// a's durable state.
func sameStreams(t *testing.T, a, b njs.JetStream, name string) {
	t.Helper()
	ctx := testCtx(t)
	sa, err := a.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	ia, ib := sa.CachedInfo().State, sb.CachedInfo().State
	if ia.Msgs != ib.Msgs || ia.FirstSeq != ib.FirstSeq || ia.LastSeq != ib.LastSeq || ia.NumDeleted != ib.NumDeleted || ia.Bytes != ib.Bytes {
		t.Fatalf("state: restored %+v, original %+v", ib, ia)
	}
	for seq := ia.FirstSeq; seq <= ia.LastSeq; seq++ {
		ma, errA := sa.GetMsg(ctx, seq)
		mb, errB := sb.GetMsg(ctx, seq)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("seq %d: original err %v, restored err %v", seq, errA, errB)
		}
		if errA != nil {
			continue
		}
		if ma.Subject != mb.Subject || !bytes.Equal(ma.Data, mb.Data) || fmt.Sprint(ma.Header) != fmt.Sprint(mb.Header) {
			t.Fatalf("seq %d: restored %s %v %d bytes, original %s %v %d bytes", seq, mb.Subject, mb.Header, len(mb.Data), ma.Subject, ma.Header, len(ma.Data))
		}
	}
	ca, err := sa.Consumer(ctx, "worker")
	if err != nil {
		t.Fatal(err)
	}
	cb, err := sb.Consumer(ctx, "worker")
	if err != nil {
		t.Fatalf("restored consumer: %v", err)
	}
	x, y := ca.CachedInfo(), cb.CachedInfo()
	// Last activity times are not durable state (a restart drops them too).
	x.Delivered.Last, x.AckFloor.Last, y.Delivered.Last, y.AckFloor.Last = nil, nil, nil, nil
	if x.Delivered != y.Delivered || x.AckFloor != y.AckFloor || x.NumAckPending != y.NumAckPending || x.NumPending != y.NumPending {
		t.Fatalf("consumer: restored delivered %+v floor %+v ackpending %d pending %d, original %+v %+v %d %d",
			y.Delivered, y.AckFloor, y.NumAckPending, y.NumPending, x.Delivered, x.AckFloor, x.NumAckPending, x.NumPending)
	}
}

// A leafbox snapshot restores onto a fresh leafbox with every message at
// its sequence and the consumer's state; a second restore of the name is
// refused with 10130, and the restored stream takes new messages.
func TestSnapshotRestoreRoundTrip(t *testing.T) {
	src := newTestEnv(t, Config{})
	fillStream(t, src.js, "ORDERS")
	meta, data := takeSnapshot(t, src.nc, "ORDERS", 4096)
	if meta.Type != "io.nats.jetstream.api.v1.stream_snapshot_response" {
		t.Fatalf("type %q", meta.Type)
	}

	dst := newTestEnv(t, Config{})
	if desc := restoreSnapshot(t, dst.nc, "ORDERS", meta.Config, data); desc != "" {
		t.Fatalf("restore: %s", desc)
	}
	sameStreams(t, src.js, dst.js, "ORDERS")
	// It survives a restart like any stream.
	dst.restart()
	nc, js := dst.newClient()
	sameStreams(t, src.js, js, "ORDERS")
	if desc := restoreSnapshot(t, nc, "ORDERS", meta.Config, data); !strings.Contains(desc, "already in use") {
		t.Fatalf("second restore: %q", desc)
	}
	ctx := testCtx(t)
	ack, err := js.Publish(ctx, "ORDERS.new", []byte("x"))
	if err != nil || ack.Sequence != 41 {
		t.Fatalf("publish after restore: %+v %v", ack, err)
	}
	// The restored consumer goes on from where the original stood.
	cons, err := js.Consumer(ctx, "ORDERS", "worker")
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.Fetch(1, njs.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		md, _ := m.Metadata()
		if md.Sequence.Stream != 14 {
			t.Fatalf("next delivery is stream seq %d, want 14", md.Sequence.Stream)
		}
	}
}

// A truncated or damaged archive is refused with the reason, and leaves
// nothing in the store.
func TestRestoreRefusesDamagedSnapshot(t *testing.T) {
	src := newTestEnv(t, Config{})
	fillStream(t, src.js, "ORDERS")
	meta, data := takeSnapshot(t, src.nc, "ORDERS", 0)
	dst := newTestEnv(t, Config{})
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"truncated", data[:len(data)/2], "not a valid leafbox snapshot"},
		{"flipped", flip(data, len(data)/3), "not a valid leafbox snapshot"},
		{"not s2", []byte("hello, this is not a snapshot at all"), "not a valid leafbox snapshot"},
	} {
		if desc := restoreSnapshot(t, dst.nc, "ORDERS", meta.Config, tc.data); !strings.Contains(desc, tc.want) {
			t.Fatalf("%s: %q, want %q", tc.name, desc, tc.want)
		}
		ents, err := os.ReadDir(dst.cfg.StoreDir)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 0 {
			t.Fatalf("%s: the store holds %v after a failed restore", tc.name, ents)
		}
		if _, err := dst.js.Stream(testCtx(t), "ORDERS"); !errors.Is(err, njs.ErrStreamNotFound) {
			t.Fatalf("%s: stream after failed restore: %v", tc.name, err)
		}
	}
}

func flip(b []byte, i int) []byte {
	c := append([]byte(nil), b...)
	c[i] ^= 0x10
	return c
}

// A snapshot nats-server made is refused with an error naming it, the
// same test taking one from leafbox and one from a real nats-server.
func TestRestoreRefusesNATSServerSnapshot(t *testing.T) {
	_, hnc, hjs := startNATSServerJS(t)
	fillStream(t, hjs, "ORDERS")
	nmeta, ndata := takeSnapshot(t, hnc, "ORDERS", 0)

	src := newTestEnv(t, Config{})
	fillStream(t, src.js, "ORDERS")
	lmeta, ldata := takeSnapshot(t, src.nc, "ORDERS", 0)

	dst := newTestEnv(t, Config{})
	if desc := restoreSnapshot(t, dst.nc, "ORDERS", nmeta.Config, ndata); !strings.Contains(desc, "made by nats-server") {
		t.Fatalf("nats-server snapshot: %q", desc)
	}
	if desc := restoreSnapshot(t, dst.nc, "ORDERS", lmeta.Config, ldata); desc != "" {
		t.Fatalf("leafbox snapshot after the refused one: %q", desc)
	}
	sameStreams(t, src.js, dst.js, "ORDERS")
	// Both servers describe the same stream alike in the response.
	var nc, lc map[string]any
	_ = json.Unmarshal(nmeta.Config, &nc)
	_ = json.Unmarshal(lmeta.Config, &lc)
	if nc["name"] != lc["name"] || fmt.Sprint(nc["subjects"]) != fmt.Sprint(lc["subjects"]) {
		t.Fatalf("configs differ: %v vs %v", nc, lc)
	}
}

// Requests nats-server refuses are refused alike.
func TestSnapshotRefusals(t *testing.T) {
	env := newTestEnv(t, Config{})
	fillStream(t, env.js, "ORDERS")
	ask := func(subj string, body string) string {
		msg, err := env.nc.Request(subj, []byte(body), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return string(msg.Data)
	}
	for _, tc := range []struct{ subj, body, want string }{
		{"$JS.API.STREAM.SNAPSHOT.NOPE", `{"deliver_subject":"x"}`, `"err_code":10059`},
		{"$JS.API.STREAM.SNAPSHOT.ORDERS", `{"deliver_subject":"a.*"}`, `"err_code":10015`},
		{"$JS.API.STREAM.SNAPSHOT.ORDERS", ``, `"err_code":10003`},
		{"$JS.API.STREAM.RESTORE.ORDERS", `{"config":{"name":"ORDERS","subjects":["x.>"],"storage":"file"}}`, `"err_code":10130`},
		{"$JS.API.STREAM.RESTORE.OTHER", `{"config":{"name":"ORDERS2","storage":"file"}}`, `"err_code":10056`},
		{"$JS.API.STREAM.RESTORE.MEM", `{"config":{"name":"MEM","storage":"memory"}}`, `"err_code":10062`},
		{"$JS.API.STREAM.RESTORE.OVER", `{"config":{"name":"OVER","subjects":["ORDERS.x"],"storage":"file"}}`, `"err_code":10065`},
	} {
		if got := ask(tc.subj, tc.body); !strings.Contains(got, tc.want) {
			t.Errorf("%s %s: %s, want %s", tc.subj, tc.body, got, tc.want)
		}
	}
}

// natsCLI finds the pinned nats CLI (.tools/bin, else PATH).
func natsCLI(t *testing.T) string {
	t.Helper()
	if dir, err := os.Getwd(); err == nil {
		for d := dir; filepath.Dir(d) != d; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				if bin := filepath.Join(d, ".tools", "bin", "nats"); fileExists(bin) {
					return bin
				}
				break
			}
		}
	}
	if p, err := exec.LookPath("nats"); err == nil {
		return p
	}
	t.Fatal("the nats CLI is not installed: run scripts/test, which installs the pinned natscli")
	return ""
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// runNATS runs the nats CLI against url and returns its combined output.
func runNATS(t *testing.T, url string, args ...string) (string, error) {
	t.Helper()
	ctx := testCtx(t)
	cmd := exec.CommandContext(ctx, natsCLI(t), append([]string{"--server", url, "--no-context"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// `nats stream backup` from leafbox restores onto a fresh leafbox with
// `nats stream restore`, messages and consumer state alike; a backup the
// same CLI took from a real nats-server is refused with an error that
// says so.
func TestSnapshotNATSCLIBackupRestore(t *testing.T) {
	hub, _, hjs := startNATSServerJS(t)
	fillStream(t, hjs, "ORDERS")
	natsDir := filepath.Join(t.TempDir(), "from-nats-server")
	if out, err := runNATS(t, hub.ClientURL(), "stream", "backup", "ORDERS", natsDir, "--no-progress"); err != nil {
		t.Fatalf("backup from nats-server: %v\n%s", err, out)
	}

	src := newTestEnv(t, Config{})
	fillStream(t, src.js, "ORDERS")
	lbDir := filepath.Join(t.TempDir(), "from-leafbox")
	if out, err := runNATS(t, src.srv.ClientURL(), "stream", "backup", "ORDERS", lbDir, "--no-progress", "--chunk-size=8KB", "--window-size=32KB"); err != nil {
		t.Fatalf("backup from leafbox: %v\n%s", err, out)
	}

	dst := newTestEnv(t, Config{})
	out, err := runNATS(t, dst.srv.ClientURL(), "stream", "restore", natsDir, "--no-progress")
	if err == nil || !strings.Contains(out, "made by nats-server") {
		t.Fatalf("restore of a nats-server backup: err %v, output:\n%s", err, out)
	}
	t.Logf("nats stream restore of a nats-server backup:\n%s", out)
	if out, err := runNATS(t, dst.srv.ClientURL(), "stream", "restore", lbDir, "--no-progress"); err != nil {
		t.Fatalf("restore of a leafbox backup: %v\n%s", err, out)
	}
	sameStreams(t, src.js, dst.js, "ORDERS")
	out, err = runNATS(t, dst.srv.ClientURL(), "stream", "restore", lbDir, "--no-progress")
	if err == nil || !strings.Contains(out, "already exist") {
		t.Fatalf("restore onto an existing stream: err %v, output:\n%s", err, out)
	}
}

// A KV bucket (rollups, per-subject history, deletes: many interior
// gaps) restores with every key's value and revision.
func TestSnapshotRestoreKV(t *testing.T) {
	ctx := testCtx(t)
	src := newTestEnv(t, Config{})
	kv, err := src.js.CreateKeyValue(ctx, njs.KeyValueConfig{Bucket: "CFG", History: 2, Storage: njs.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := kv.Put(ctx, fmt.Sprintf("k%d", i%7), []byte(fmt.Sprintf("v%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Delete(ctx, "k3"); err != nil {
		t.Fatal(err)
	}
	if err := kv.Purge(ctx, "k4"); err != nil {
		t.Fatal(err)
	}
	meta, data := takeSnapshot(t, src.nc, "KV_CFG", 0)
	dst := newTestEnv(t, Config{})
	if desc := restoreSnapshot(t, dst.nc, "KV_CFG", meta.Config, data); desc != "" {
		t.Fatalf("restore: %s", desc)
	}
	got, err := dst.js.KeyValue(ctx, "CFG")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		key := fmt.Sprintf("k%d", i)
		a, errA := kv.Get(ctx, key)
		b, errB := got.Get(ctx, key)
		if (errA == nil) != (errB == nil) || (errA == nil && (string(a.Value()) != string(b.Value()) || a.Revision() != b.Revision())) {
			t.Fatalf("%s: original %v %v, restored %v %v", key, a, errA, b, errB)
		}
	}
	if _, err := got.Put(ctx, "k0", []byte("after")); err != nil {
		t.Fatal(err)
	}
}

// Chunks go out under flow control: with a window of two chunks and a
// receiver that never answers, two chunks arrive, then the end with 408
// No Flow Response, as nats-server sends it.
func TestSnapshotFlowControl(t *testing.T) {
	env := newTestEnv(t, Config{})
	fillStream(t, env.js, "ORDERS")
	inbox := nats.NewInbox()
	sub, err := env.nc.SubscribeSync(inbox)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := json.Marshal(map[string]any{"deliver_subject": inbox, "chunk_size": 1024, "window_size": 2048})
	if _, err := env.nc.Request("$JS.API.STREAM.SNAPSHOT.ORDERS", req, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	chunks := 0
	for {
		m, err := sub.NextMsg(3 * snapshotAckTimeout)
		if err != nil {
			t.Fatalf("after %d chunks: %v", chunks, err)
		}
		if len(m.Data) > 0 {
			chunks++
			if len(m.Data) != 1024 || !strings.HasPrefix(m.Reply, "$JS.SNAPSHOT.ACK.ORDERS.") || !strings.HasSuffix(m.Reply, fmt.Sprintf(".1024.%d", chunks)) {
				t.Fatalf("chunk %d: %d bytes, reply %q", chunks, len(m.Data), m.Reply)
			}
			continue
		}
		if got := m.Header.Get("Status"); got != "408" || m.Header.Get("Description") != "No Flow Response" || chunks != 2 {
			t.Fatalf("ended with %q %q after %d chunks, want 408 No Flow Response after 2", got, m.Header.Get("Description"), chunks)
		}
		return
	}
}

// A restore that does not fit max_file_store is refused with 10047.
func TestRestoreRefusesOverLimit(t *testing.T) {
	src := newTestEnv(t, Config{})
	fillStream(t, src.js, "ORDERS")
	meta, data := takeSnapshot(t, src.nc, "ORDERS", 0)
	dst := newTestEnv(t, Config{MaxStore: 10 << 10})
	if desc := restoreSnapshot(t, dst.nc, "ORDERS", meta.Config, data); !strings.Contains(desc, "insufficient storage") {
		t.Fatalf("restore over the limit: %q", desc)
	}
}
