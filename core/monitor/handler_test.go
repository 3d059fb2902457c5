package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leafbox/leafbox/core/require"
)

func TestHeaders(t *testing.T) {
	h := newTestHandler(t, newFixture())
	jsonPaths := []string{
		"/varz", "/connz", "/subsz", "/subscriptionsz", "/accountz", "/healthz",
		"/jsz", "/leafz", "/uplinkz", "/routez", "/gatewayz",
	}
	for _, path := range jsonPaths {
		t.Run(path, func(t *testing.T) {
			res, body := get(t, h, path)
			require.Equal(t, res.StatusCode, http.StatusOK, "status")
			require.Equal(t, res.Header.Get("Content-Type"), "application/json", "Content-Type")
			require.Equal(t, res.Header.Get("Access-Control-Allow-Origin"), "*", "CORS")
			decode(t, body)
		})
	}
	res, _ := get(t, h, "/nope")
	require.Equal(t, res.StatusCode, http.StatusNotFound, "unknown path")
	require.Equal(t, res.Header.Get("Access-Control-Allow-Origin"), "*", "CORS on 404")
	res, _ = get(t, h, "/varz/extra")
	require.Equal(t, res.StatusCode, http.StatusNotFound, "path below an endpoint")
}

func TestRoot(t *testing.T) {
	h := newTestHandler(t, newFixture())
	res, body := get(t, h, "/")
	require.Equal(t, res.StatusCode, http.StatusOK, "status")
	require.Equal(t, res.Header.Get("Content-Type"), "text/html; charset=utf-8", "Content-Type")
	for _, e := range endpoints {
		if !strings.Contains(string(body), `href=".`+e.path+`"`) {
			t.Errorf("index does not link %s", e.path)
		}
	}
	require.Equal(t, h.requestStats()["/"], uint64(1), "counted")
}

func TestJSONP(t *testing.T) {
	h := newTestHandler(t, newFixture())
	res, body := get(t, h, "/healthz?callback=app.onHealth")
	require.Equal(t, res.Header.Get("Content-Type"), "application/javascript", "Content-Type")
	require.Equal(t, string(body), `app.onHealth({"status":"ok"})`, "body")

	for _, cb := range []string{"alert(1)//", "a..b", "1abc", "a b", strings.Repeat("a", 200)} {
		require400(t, h, "/healthz?callback="+urlEscape(cb), "invalid callback")
	}
}

func urlEscape(s string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29", "/", "%2F").Replace(s)
}

func TestJszDisabled(t *testing.T) {
	h := newTestHandler(t, newFixture())
	m := getJSON(t, h, "/jsz")
	requireKeys(t, "jsz", m,
		"server_id", "now", "disabled", "config", "memory", "storage", "reserved_memory",
		"reserved_storage", "accounts", "ha_assets", "api", "streams", "consumers",
		"messages", "bytes", "total")
	require.Equal(t, m["disabled"], any(true), "disabled")
	requireKeys(t, "jsz.config", object(t, m, "config"), "max_memory", "max_storage")
	requireKeys(t, "jsz.api", object(t, m, "api"), "level", "total", "errors")
	require400(t, h, "/jsz?accounts=x", "Error decoding boolean for 'accounts'")
	require400(t, h, "/jsz?limit=x", "Error decoding int for 'limit'")
}

// jsProvider adds a JetStreamProvider to the fixture.
type jsProvider struct {
	*fakeProvider
	mu   sync.Mutex
	opts JszOptions
	err  error
}

func (j *jsProvider) Jsz(opts JszOptions) (*Jsz, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.opts = opts
	if j.err != nil {
		return nil, j.err
	}
	return &Jsz{
		ID:      "ignored",
		Streams: 2,
		AccountDetails: []*AccountDetail{{
			Name: "A", ID: "A",
			Streams: []StreamDetail{{Name: "ORDERS", Created: t0, State: map[string]any{"messages": 3}}},
		}},
		Total: 1,
	}, nil
}

func TestJszProvider(t *testing.T) {
	p := &jsProvider{fakeProvider: newFixture()}
	h := newTestHandler(t, p)
	m := getJSON(t, h, "/jsz?consumers=true&offset=-3")
	require.Equal(t, m["server_id"], any("NSERVERID"), "server_id")
	requireNoKeys(t, "enabled jsz", m, "disabled")
	details := m["account_details"].([]any)
	d := details[0].(map[string]any)
	requireKeys(t, "account_details[0]", d, "name", "id", "memory", "storage", "api", "stream_detail")
	sd := d["stream_detail"].([]any)[0].(map[string]any)
	requireKeys(t, "stream_detail[0]", sd, "name", "created", "state")

	p.mu.Lock()
	got := p.opts
	p.mu.Unlock()
	want := JszOptions{Consumers: true, Streams: true, Accounts: true, Limit: DefaultJszLimit}
	require.Equal(t, got, want, "normalized options")

	p.err = errors.New("not leader")
	require400(t, h, "/jsz", "not leader")
}

// leafProvider adds a LeafProvider to the fixture.
type leafProvider struct {
	*fakeProvider
}

func (leafProvider) Leafs(subs bool) []LeafInfo {
	leafs := []LeafInfo{
		{ID: 8, Name: "hub-1", IsSpoke: true, Account: "A", IP: "10.0.0.1", Port: 7422, RTT: "3ms", NumSubs: 2, Compression: "s2_auto"},
		{ID: 9, Name: "hub-2", IsSpoke: true, Account: "B", IP: "10.0.0.2", Port: 7422, RTT: "4ms"},
	}
	if subs {
		leafs[0].Subs = []string{"foo.>", "bar"}
	}
	return leafs
}

func TestLeafz(t *testing.T) {
	m := getJSON(t, newTestHandler(t, newFixture()), "/leafz")
	requireKeys(t, "leafz", m, "server_id", "now", "leafnodes", "leafs")
	if l, ok := m["leafs"].([]any); !ok || len(l) != 0 {
		t.Fatalf("leafs = %#v", m["leafs"])
	}

	h := newTestHandler(t, leafProvider{newFixture()})
	m = getJSON(t, h, "/leafz?subs=1")
	require.Equal(t, m["leafnodes"], any(2.0), "leafnodes")
	l := m["leafs"].([]any)[0].(map[string]any)
	requireKeys(t, "leafs[0]", l, "id", "name", "is_spoke", "account", "ip", "port", "rtt",
		"in_msgs", "out_msgs", "in_bytes", "out_bytes", "subscriptions", "subscriptions_list", "compression")

	lz := getStruct[Leafz](t, h, "/leafz?acc=B")
	if lz.NumLeafs != 1 || lz.Leafs[0].ID != 9 || lz.Leafs[0].Subs != nil {
		t.Fatalf("acc=B: %+v", lz)
	}
	require400(t, h, "/leafz?subs=x", "Error decoding boolean for 'subs'")
}

// uplinkProvider adds an UplinkProvider to the fixture.
type uplinkProvider struct {
	*fakeProvider
}

func (uplinkProvider) Uplinks() []UplinkInfo {
	at := t0.Add(time.Hour)
	return []UplinkInfo{
		{Name: "tel", State: "backoff", LinkState: "connecting", Captured: 10, Stored: 10, Forwarded: 4, Acked: 3,
			Dropped: map[string]uint64{"limits": 2}, Retries: 1, BacklogMsgs: 5, BacklogBytes: 500,
			OldestAgeSeconds: 12.5, LastError: "no responders", LastErrorAt: &at},
		{Name: "logs", State: "forwarding", LinkState: "connected"},
	}
}

func TestUplinkz(t *testing.T) {
	m := getJSON(t, newTestHandler(t, newFixture()), "/uplinkz")
	requireKeys(t, "uplinkz", m, "server_id", "now", "num_uplinks", "uplinks")
	if u, ok := m["uplinks"].([]any); !ok || len(u) != 0 {
		t.Fatalf("uplinks = %#v", m["uplinks"])
	}

	h := newTestHandler(t, uplinkProvider{newFixture()})
	m = getJSON(t, h, "/uplinkz")
	require.Equal(t, m["num_uplinks"], any(2.0), "num_uplinks")
	require.Equal(t, m["now"], any(testNow.Format(time.RFC3339)), "now")
	u := m["uplinks"].([]any)[0].(map[string]any)
	requireKeys(t, "uplinks[0]", u, "name", "state", "link_state", "captured", "stored", "forwarded", "acked",
		"dropped", "retries", "in_flight", "backlog_msgs", "backlog_bytes", "oldest_age_seconds", "last_error", "last_error_at")
	if d, ok := u["dropped"].(map[string]any); !ok || len(d) != 1 || d["limits"] != 2.0 {
		t.Fatalf("dropped = %#v", u["dropped"])
	}
	uz := getStruct[Uplinkz](t, h, "/uplinkz")
	if l := uz.Uplinks[1]; l.Name != "logs" || l.Dropped != nil || l.LastErrorAt != nil {
		t.Fatalf("uplinks[1]: %+v", l)
	}
	require.Equal(t, h.requestStats()[UplinkzPath], uint64(2), "counted")
}

func TestRoutezGatewayz(t *testing.T) {
	h := newTestHandler(t, newFixture())
	m := getJSON(t, h, "/routez")
	requireKeys(t, "routez", m, "server_id", "server_name", "now", "num_routes", "routes")
	require.Equal(t, m["server_name"], any("edge-1"), "server_name")
	if r, ok := m["routes"].([]any); !ok || len(r) != 0 {
		t.Fatalf("routes = %#v", m["routes"])
	}
	m = getJSON(t, h, "/gatewayz")
	requireKeys(t, "gatewayz", m, "server_id", "now", "outbound_gateways", "inbound_gateways")
	object(t, m, "outbound_gateways")
	object(t, m, "inbound_gateways")
	require400(t, h, "/routez?subs=x", "Error decoding boolean for 'subs'")
}

func TestAccountz(t *testing.T) {
	p := newFixture()
	p.conns = append(p.conns, ConnSnapshot{Cid: 8, Kind: "Leafnode", Account: "A", Start: t0, LastActivity: t0})
	h := newTestHandler(t, p)

	az := getStruct[Accountz](t, h, "/accountz")
	require.Equal(t, az.SystemAccount, "SYS", "system_account")
	require.Equal(t, strings.Join(az.Accounts, ","), "$G,A,B,SYS", "accounts")
	requireKeys(t, "accountz", getJSON(t, h, "/accountz"), "server_id", "now", "system_account", "accounts")

	m := getJSON(t, h, "/accountz?acc=A")
	d := object(t, m, "account_detail")
	requireKeys(t, "account_detail", d, "account_name", "expired", "complete", "jetstream_enabled",
		"leafnode_connections", "client_connections", "subscriptions", "sublist_stats")
	requireNoKeys(t, "account detail", m, "accounts")
	az = getStruct[Accountz](t, h, "/accountz?acc=A")
	info := az.Account
	require.Equal(t, info.ClientCnt, 2, "client_connections")
	require.Equal(t, info.LeafCnt, 1, "leafnode_connections")
	require.Equal(t, info.SubCnt, uint32(4), "subscriptions")
	require.Equal(t, info.JetStream, false, "jetstream_enabled")

	az = getStruct[Accountz](t, h, "/accountz?acc=SYS")
	require.Equal(t, az.Account.IsSystem, true, "is_system")

	require400(t, h, "/accountz?acc=nope", "Account nope does not exist")

	js := newTestHandler(t, &jsProvider{fakeProvider: newFixture()})
	az = getStruct[Accountz](t, js, "/accountz?acc=A")
	require.Equal(t, az.Account.JetStream, true, "jetstream_enabled with JetStream")
}

func TestListen(t *testing.T) {
	srv, err := Listen("127.0.0.1:0", NewHandler(newFixture()))
	if err != nil {
		t.Fatal(err)
	}
	addr := srv.Addr().(*net.TCPAddr)
	if addr.Port == 0 {
		t.Fatal("port 0 was not resolved")
	}

	// Binding the same address again fails.
	if other, err := Listen(addr.String(), NewHandler(newFixture())); err == nil {
		_ = other.Shutdown(context.Background())
		t.Fatal("second Listen on the same address succeeded")
	}

	client := &http.Client{Timeout: 5 * time.Second}
	res, err := client.Get(fmt.Sprintf("http://%s/varz", addr))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	m := decode(t, body)
	require.
		// Without a configured monitoring address, the listener's is reported.
		Equal(t, m["http_host"], any("127.0.0.1"), "http_host")
	require.Equal(t, m["http_port"], any(float64(addr.Port)), "http_port")
	client.CloseIdleConnections()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := client.Get(fmt.Sprintf("http://%s/varz", addr)); err == nil {
		t.Fatal("server still answers after Shutdown")
	}
}

func TestConcurrentRequests(t *testing.T) {
	h := newTestHandler(t, newFixture())
	paths := []string{"/varz", "/connz?subs=detail&state=any", "/subsz?subs=1", "/metrics", "/healthz", "/accountz?acc=A"}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, paths[(i+j)%len(paths)], nil))
				if rec.Code != http.StatusOK {
					t.Errorf("status %d", rec.Code)
					return
				}
			}
		}()
	}
	wg.Wait()
	var total uint64
	for _, n := range h.requestStats() {
		total += n
	}
	require.Equal(t, total, uint64(8*20), "requests counted")
}

// sharingProvider hands out the same stored values on every call, as a
// provider may for immutable data.
type sharingProvider struct {
	*fakeProvider
	varz  *Varz
	conns []ConnSnapshot
	subs  []SubDetail
	names []string
}

func newSharingProvider() *sharingProvider {
	f := newFixture()
	conns := f.Connections(ConnAll, true)
	return &sharingProvider{fakeProvider: f, varz: f.Varz(), conns: conns, subs: f.Subscriptions(""), names: f.Accounts()}
}

func (s *sharingProvider) Varz() *Varz                                { return s.varz }
func (s *sharingProvider) Connections(ConnState, bool) []ConnSnapshot { return s.conns }
func (s *sharingProvider) Subscriptions(string) []SubDetail           { return s.subs }
func (s *sharingProvider) Accounts() []string                         { return s.names }

func TestProviderDataIsReadOnly(t *testing.T) {
	p := newSharingProvider()
	before := newSharingProvider()
	h := newTestHandler(t, p)
	paths := []string{
		"/varz", "/metrics", "/connz?subs=detail&state=any&sort=subs", "/connz?subs=1&state=any",
		"/subsz?subs=1", "/subsz?subs=1&test=foo.one", "/accountz", "/accountz?acc=A",
	}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, path := range paths[i%2:] {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
			}
		}()
	}
	wg.Wait()
	if !reflect.DeepEqual(p.varz, before.varz) {
		t.Error("Varz result modified")
	}
	if !reflect.DeepEqual(p.conns, before.conns) {
		t.Error("Connections result modified")
	}
	if !reflect.DeepEqual(p.subs, before.subs) {
		t.Error("Subscriptions result modified")
	}
	if !reflect.DeepEqual(p.names, before.names) {
		t.Error("Accounts result modified")
	}
}
