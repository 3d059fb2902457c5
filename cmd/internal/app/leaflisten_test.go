package app

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/leafbox/leafbox/core/monitor"
	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/leaf"
	"github.com/leafbox/leafbox/leaf/leaftest"
)

// waitLeafs waits until the App's listener satisfies cond.
func waitLeafs(t *testing.T, a *App, what string, cond func([]leaf.AcceptedStatus) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	if err := a.LeafListener().Wait(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v; leafs: %+v", what, err, a.LeafListener().Leafs())
	}
}

// hasLeafSubject reports a condition: exactly one leaf, whose interest
// holds (want true) or lacks (want false) subject.
func hasLeafSubject(subject string, want bool) func([]leaf.AcceptedStatus) bool {
	return func(ls []leaf.AcceptedStatus) bool {
		return len(ls) == 1 && slices.Contains(ls[0].Subjects, subject) == want
	}
}

// flushLeafs waits until every attached leaf has processed what was sent
// to it.
func flushLeafs(t *testing.T, a *App) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, a.LeafListener().Flush(ctx))
}

// TestLeafListenNatsServerLeaf attaches a real nats-server, configured
// with a leafnodes remote, to leafbox's leafnode port: messages, headers,
// request-reply and queue groups cross both ways, interest removal stops
// the flow, and /leafz lists the leaf.
func TestLeafListenNatsServerLeaf(t *testing.T) {
	a := startApp(t, "http_port: -1\nserver_name: gw-hub\n"+
		"leafnodes: {listen: '127.0.0.1:-1', authorization: {user: leaf, password: s3cret}}\n", Flags{})
	port := a.LeafListener().Addr().String()
	leafSrv := leaftest.StartHub(t, leaftest.HubOptions{Name: "ns-leaf",
		Leaf: fmt.Sprintf(`remotes: [{url: "nats-leaf://leaf:s3cret@%s"}]`, port)})
	waitLeafs(t, a, "the nats-server leaf", func(ls []leaf.AcceptedStatus) bool {
		return len(ls) == 1 && slices.ContainsFunc(ls[0].Subjects, func(s string) bool { return strings.HasPrefix(s, "$LDS.") })
	})
	st := a.LeafListener().Leafs()[0]
	require.DeepEqual(t, st.Name, "ns-leaf")
	require.DeepEqual(t, st.Account, "$G")
	if !strings.HasPrefix(st.Compression, "s2_") { // both sides default to s2_auto
		t.Fatalf("compression %q, want an s2 level", st.Compression)
	}

	gw := natsConnect(t, "nats://"+a.Addr().String())
	nc := natsConnect(t, leafSrv.ClientURL())

	// leafbox → leaf, with headers.
	down, err := nc.SubscribeSync("down.>")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	waitLeafs(t, a, "LS+ down.>", hasLeafSubject("down.>", true))
	msg := nats.NewMsg("down.temp")
	msg.Header.Set("Unit", "C")
	msg.Data = []byte("21.5")
	require.NoError(t, gw.PublishMsg(msg))
	m := nextMsg(t, down)
	if m.Subject != "down.temp" || string(m.Data) != "21.5" || m.Header.Get("Unit") != "C" {
		t.Fatalf("leaf got %q %q %v", m.Subject, m.Data, m.Header)
	}

	// leaf → leafbox.
	up, err := gw.SubscribeSync("up.>")
	require.NoError(t, err)
	require.NoError(t, gw.Flush())
	flushLeafs(t, a)
	hm := nats.NewMsg("up.x")
	hm.Header.Set("Trace", "7")
	hm.Data = []byte("hello")
	require.NoError(t, nc.PublishMsg(hm))
	if m := nextMsg(t, up); m.Subject != "up.x" || string(m.Data) != "hello" || m.Header.Get("Trace") != "7" {
		t.Fatalf("gateway got %q %q %v", m.Subject, m.Data, m.Header)
	}

	// Request-reply both ways.
	_, err = nc.Subscribe("svc.leaf", func(m *nats.Msg) { _ = m.Respond(append([]byte("leaf:"), m.Data...)) })
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	waitLeafs(t, a, "LS+ svc.leaf", hasLeafSubject("svc.leaf", true))
	resp, err := gw.Request("svc.leaf", []byte("q1"), testTimeout)
	require.NoError(t, err)
	require.DeepEqual(t, string(resp.Data), "leaf:q1")
	_, err = gw.Subscribe("svc.gw", func(m *nats.Msg) { _ = m.Respond(append([]byte("gw:"), m.Data...)) })
	require.NoError(t, err)
	require.NoError(t, gw.Flush())
	flushLeafs(t, a)
	resp, err = nc.Request("svc.gw", []byte("q2"), testTimeout)
	require.NoError(t, err)
	require.DeepEqual(t, string(resp.Data), "gw:q2")

	// Queue group "workers" with members on both sides: each side's
	// publishers are served by their own members, every message once.
	gwWorker, err := gw.QueueSubscribeSync("job", "workers")
	require.NoError(t, err)
	leafWorker1, err := nc.QueueSubscribeSync("job", "workers")
	require.NoError(t, err)
	leafWorker2, err := nc.QueueSubscribeSync("job", "workers")
	require.NoError(t, err)
	require.NoError(t, gw.Flush())
	require.NoError(t, nc.Flush())
	waitLeafs(t, a, "LS+ job workers", hasLeafSubject("job workers", true))
	flushLeafs(t, a)
	settle := func() { // publishers' connections, the link, then subscribers'
		t.Helper()
		require.NoError(t, gw.Flush())
		require.NoError(t, nc.Flush())
		flushLeafs(t, a)
		require.NoError(t, nc.Flush())
		require.NoError(t, gw.Flush())
	}
	const n = 20
	for i := range n {
		require.NoError(t, gw.Publish("job", []byte(fmt.Sprint("g", i))))
		require.NoError(t, nc.Publish("job", []byte(fmt.Sprint("l", i))))
	}
	for range n {
		if m := nextMsg(t, gwWorker); m.Data[0] != 'g' {
			t.Fatalf("gateway worker got %q, a leaf publish", m.Data)
		}
	}
	leafGot := drainQueue(t, n, settle, leafWorker1, leafWorker2)
	for _, d := range leafGot {
		if d[0] != 'l' {
			t.Fatalf("leaf worker got %q, a gateway publish", d)
		}
	}
	// Without a local member the leaf's members serve the gateway's
	// publishers, each message once.
	require.NoError(t, gwWorker.Unsubscribe())
	require.NoError(t, gw.Flush())
	flushLeafs(t, a)
	for i := range n {
		require.NoError(t, gw.Publish("job", []byte(fmt.Sprint("g", i))))
	}
	got := drainQueue(t, n, settle, leafWorker1, leafWorker2)
	slices.Sort(got)
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprint("g", i)
	}
	slices.Sort(want)
	require.DeepEqual(t, got, want)

	// Interest removal: after LS- nothing more is sent to the leaf.
	require.NoError(t, down.Unsubscribe())
	require.NoError(t, nc.Flush())
	waitLeafs(t, a, "LS- down.>", hasLeafSubject("down.>", false))
	before := a.LeafListener().Leafs()[0].OutMsgs
	require.NoError(t, gw.Publish("down.temp", []byte("gone")))
	require.NoError(t, gw.Flush())
	flushLeafs(t, a)
	if after := a.LeafListener().Leafs()[0].OutMsgs; after != before {
		t.Fatalf("a message without interest went to the leaf (%d → %d)", before, after)
	}

	// /leafz lists the attached leaf next to the (absent) uplinks.
	var lz struct {
		Leafs []struct {
			Name    string   `json:"name"`
			IsSpoke bool     `json:"is_spoke"`
			Account string   `json:"account"`
			IP      string   `json:"ip"`
			InMsgs  int64    `json:"in_msgs"`
			Subs    []string `json:"subscriptions_list"`
		} `json:"leafs"`
	}
	getJSON(t, "http://"+a.MonitorAddr().String()+"/leafz?subs=1", &lz)
	var vz struct {
		Leafs int `json:"leafnodes"`
	}
	getJSON(t, "http://"+a.MonitorAddr().String()+"/varz", &vz)
	require.DeepEqual(t, vz.Leafs, 1)
	if len(lz.Leafs) != 1 || lz.Leafs[0].Name != "ns-leaf" || lz.Leafs[0].IsSpoke || lz.Leafs[0].Account != "$G" ||
		lz.Leafs[0].IP != "127.0.0.1" || lz.Leafs[0].InMsgs < 1 || !contains(lz.Leafs[0].Subs, "svc.leaf") {
		t.Fatalf("/leafz: %+v", lz)
	}

	// When the leaf goes, so does its interest here.
	hasSub := func(subject string) bool {
		return slices.ContainsFunc(a.srv.Subscriptions("$G"), func(d monitor.SubDetail) bool { return d.Subject == subject })
	}
	if !hasSub("svc.leaf") {
		t.Fatal("no local subscription for the leaf's interest")
	}
	leafSrv.Kill()
	waitLeafs(t, a, "the leaf to go", func(ls []leaf.AcceptedStatus) bool { return len(ls) == 0 })
	for _, subj := range []string{"svc.leaf", "job"} {
		if hasSub(subj) {
			t.Fatalf("the leaf's interest in %q outlived it", subj)
		}
	}
}

// drainQueue receives n messages from the members of one queue group and
// returns their payloads; then, after settle (which waits until anything
// still in flight has arrived), it requires that no member holds more.
func drainQueue(t *testing.T, n int, settle func(), subs ...*nats.Subscription) []string {
	t.Helper()
	got, extra := receiveN(n, subs...)
	if len(got) != n || extra != 0 {
		t.Fatalf("queue members got %d messages (and %d more), want %d", len(got), extra, n)
	}
	settle()
	for _, s := range subs {
		if k, _, _ := s.Pending(); k != 0 {
			t.Fatalf("a queue member holds %d more messages: duplicates", k)
		}
	}
	return got
}

// TestLeafListenRefusesWrongCredentials: a nats-server leaf with a wrong
// password is refused with nats-server's -ERR, which it logs; no leaf
// registers.
func TestLeafListenRefusesWrongCredentials(t *testing.T) {
	a := startApp(t, "http_port: 0\nleafnodes: {listen: '127.0.0.1:-1', authorization: {user: leaf, password: s3cret}}\n", Flags{})
	leafSrv := leaftest.StartHub(t, leaftest.HubOptions{Name: "intruder",
		Leaf: fmt.Sprintf(`remotes: [{url: "nats-leaf://leaf:wrong@%s"}]`, a.LeafListener().Addr())})
	leafSrv.WaitLog(regexp.MustCompile("Authorization Violation"), testTimeout) // woken by each line the leaf logs
	require.DeepEqual(t, len(a.LeafListener().Leafs()), 0)
}

// TestLeafListenLeafboxGateway attaches a leafbox gateway (a solicited
// link from leafnodes.remotes) to another leafbox's leafnode port, the
// user bound to account SITE there: messages cross both ways within SITE.
func TestLeafListenLeafboxGateway(t *testing.T) {
	hub := startApp(t, "http_port: 0\nserver_name: hub-box\naccounts: {SITE: {users: [{user: s, password: p}]}}\n"+
		"leafnodes: {listen: '127.0.0.1:-1', authorization: {users: [{user: gw, password: pw, account: SITE}]}}\n", Flags{})
	gwApp := startApp(t, fmt.Sprintf("http_port: 0\nserver_name: gw-box\nleafnodes: {remotes: [{url: 'nats-leaf://gw:pw@%s'}]}\n",
		hub.LeafListener().Addr()), Flags{})
	link := gwApp.node.Link(0)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, link.WaitConnected(ctx))
	waitLeafs(t, hub, "the gateway", func(ls []leaf.AcceptedStatus) bool { return len(ls) == 1 })
	st := hub.LeafListener().Leafs()[0]
	require.DeepEqual(t, st.Name, "gw-box")
	require.DeepEqual(t, st.Account, "SITE")
	require.DeepEqual(t, link.Status().RemoteAccount, "SITE")

	hc := natsConnect(t, "nats://s:p@"+hub.Addr().String())
	gc := natsConnect(t, "nats://"+gwApp.Addr().String())

	// Hub → gateway.
	down, err := gc.SubscribeSync("down.>")
	require.NoError(t, err)
	require.NoError(t, gc.Flush())
	require.NoError(t, link.Flush(ctx))
	require.NoError(t, hc.Publish("down.cmd", []byte("reboot")))
	if m := nextMsg(t, down); m.Subject != "down.cmd" || string(m.Data) != "reboot" {
		t.Fatalf("gateway got %q %q", m.Subject, m.Data)
	}

	// Gateway → hub, and a request the hub answers.
	up, err := hc.SubscribeSync("up.>")
	require.NoError(t, err)
	_, err = hc.Subscribe("svc.hub", func(m *nats.Msg) { _ = m.Respond([]byte("ok:" + string(m.Data))) })
	require.NoError(t, err)
	require.NoError(t, hc.Flush())
	require.NoError(t, link.Flush(ctx))
	require.NoError(t, gc.Publish("up.temp", []byte("21")))
	if m := nextMsg(t, up); m.Subject != "up.temp" || string(m.Data) != "21" {
		t.Fatalf("hub got %q %q", m.Subject, m.Data)
	}
	resp, err := gc.Request("svc.hub", []byte("x"), testTimeout)
	require.NoError(t, err)
	require.DeepEqual(t, string(resp.Data), "ok:x")
}

// TestLeafListenTLSNkey attaches a leafbox gateway over TLS with a
// verified client certificate, authenticated by an NKey that signs the
// listener's nonce.
func TestLeafListenTLSNkey(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	pub := writeSeed(t, dir, "gw.nk")
	hub := startApp(t, fmt.Sprintf("http_port: 0\nleafnodes: {listen: '127.0.0.1:-1', authorization: {nkey: %s},"+
		" tls: {cert_file: %q, key_file: %q, ca_file: %q, verify: true}}\n", pub, cert, key, cert), Flags{})
	_, port, _ := strings.Cut(hub.LeafListener().Addr().String(), ":")
	gwApp := startApp(t, fmt.Sprintf("http_port: 0\nserver_name: gw-tls\nleafnodes: {remotes: [{url: 'tls://localhost:%s', nkey: %q,"+
		" tls: {ca_file: %q, cert_file: %q, key_file: %q}}]}\n", port, dir+"/gw.nk", cert, cert, key), Flags{})
	link := gwApp.node.Link(0)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	require.NoError(t, link.WaitConnected(ctx))

	hc := natsConnect(t, "nats://"+hub.Addr().String())
	gc := natsConnect(t, "nats://"+gwApp.Addr().String())
	up, err := hc.SubscribeSync("up.>")
	require.NoError(t, err)
	require.NoError(t, hc.Flush())
	require.NoError(t, link.Flush(ctx))
	require.NoError(t, gc.Publish("up.secure", []byte("x")))
	nextMsg(t, up)
}

// TestLeafListenDetectsLoop points a gateway's remote at its own leafnode
// port: the listener sees the link's loop-detection subject come back and
// refuses it with nats-server's -ERR, which the link reports.
func TestLeafListenDetectsLoop(t *testing.T) {
	port := leaftest.FreePort(t)
	a := startApp(t, fmt.Sprintf("http_port: 0\nleafnodes: {listen: '127.0.0.1:%d', remotes: [{url: 'nats-leaf://127.0.0.1:%d'}]}\n", port, port), Flags{})
	link := a.node.Link(0)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	// The link waits 30s before trying again, as after nats-server's -ERR.
	// The error is recorded first and the next attempt's time right after
	// it, so a status between the two still shows an earlier attempt's
	// short backoff: wait for both.
	if err := link.Wait(ctx, func(st leaf.Status) bool {
		return strings.Contains(st.LastError, "loop detected") && time.Until(st.RetryAt) > 20*time.Second
	}); err != nil {
		t.Fatalf("no loop reported with a retry about 30s later: %v; %+v", err, link.Status())
	}
	waitLeafs(t, a, "the looping leaf to go", func(ls []leaf.AcceptedStatus) bool { return len(ls) == 0 })
}

// TestLeafListenProtocolErrors speaks the protocol by hand to check the
// listener's refusals: each ends with nats-server's -ERR text and a
// closed connection.
func TestLeafListenProtocolErrors(t *testing.T) {
	a := startApp(t, "http_port: 0\nleafnodes: {listen: '127.0.0.1:-1', authorization: {token: t0k, timeout: 300ms}}\n", Flags{})
	const connect = `CONNECT {"name":"raw","auth_token":"t0k","headers":true,"remote_account":"$G"}` + "\r\n"
	cases := []struct {
		name, send, want string
	}{
		{"client on leaf port", `CONNECT {"lang":"go","auth_token":"t0k"}` + "\r\n", "-ERR 'attempted to connect to leaf node port'"},
		{"wrong token", `CONNECT {"auth_token":"nope"}` + "\r\n", "-ERR 'Authorization Violation'"},
		{"no CONNECT", "", "-ERR 'Authentication Timeout'"},
		{"LS+ before CONNECT", "LS+ foo\r\n", "-ERR 'Authorization Violation'"},
		{"client op before CONNECT", "SUB foo 1\r\n", "-ERR 'Unknown Protocol Operation'"},
		{"client op after CONNECT", connect + "PUB foo 1\r\nx\r\n", "-ERR 'Unknown Protocol Operation'"},
		{"JetStream API interest", connect + "LS+ $JS.API.INFO\r\n", `-ERR 'Permissions Violation for Subscription to "$JS.API.INFO"'`},
		{"KV message", connect + "LMSG $KV.b.k 1\r\nx\r\n", `-ERR 'Permissions Violation for Publish to "$KV.b.k"'`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", a.LeafListener().Addr().String(), testTimeout)
			require.NoError(t, err)
			defer conn.Close()
			require.NoError(t, conn.SetDeadline(time.Now().Add(testTimeout)))
			r := bufio.NewReader(conn)
			line, err := r.ReadString('\n')
			require.NoError(t, err)
			if !strings.HasPrefix(line, "INFO ") || !strings.Contains(line, `"nonce":`) || !strings.Contains(line, `"info_on_connect":true`) {
				t.Fatalf("first line %q", line)
			}
			_, err = conn.Write([]byte(tc.send))
			require.NoError(t, err)
			var lines []string
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					break // closed
				}
				lines = append(lines, strings.TrimSpace(line))
			}
			if !slices.Contains(lines, tc.want) {
				t.Fatalf("got %q, want %q then close", lines, tc.want)
			}
		})
	}
}

func TestAppReloadLeafListen(t *testing.T) {
	const base = "http_port: 0\nleafnodes: {listen: '127.0.0.1:-1'}\n"
	a := startApp(t, base, Flags{})
	reload := func(src string) error {
		c := loopbackConfig(t, src, tempEnv(t))
		return a.Reload(c)
	}
	require.NoError(t, reload(base+"max_payload: 2MB\n"))
	require.ErrorContains(t, reload("http_port: 0\nleafnodes: {listen: '127.0.0.1:-1', authorization: {token: x}}\n"),
		"leafnodes: changing listen, authorization, tls or compression needs a restart")
	require.ErrorContains(t, reload("http_port: 0\n"), "leafnodes: changing listen")
}

func TestLeafListenConfig(t *testing.T) {
	addr := func(src string) string {
		t.Helper()
		return mustValidate(t, src).LeafListenAddr()
	}
	require.DeepEqual(t, addr("leafnodes: {listen: 7433}"), "0.0.0.0:7433")
	require.DeepEqual(t, addr("leafnodes: {listen: '127.0.0.1'}"), "127.0.0.1:7422")
	require.DeepEqual(t, addr("leafnodes: {listen: '127.0.0.1:-1'}"), "127.0.0.1:0")
	require.DeepEqual(t, addr("leafnodes: {remotes: [{url: 'nats://h:1'}]}"), "")

	c := mustValidate(t, "accounts: {SITE: {}}\nleafnodes: {listen: 7422, compression: fast,"+
		" authorization: {token: t0k, account: SITE, timeout: 1s}}")
	ac, err := leafAcceptConfig(c)
	require.NoError(t, err)
	require.DeepEqual(t, ac.Compression, leaf.CompressionS2Fast)
	require.DeepEqual(t, ac.Account, "SITE")
	require.DeepEqual(t, ac.AuthTimeout, time.Second)
	require.DeepEqual(t, ac.Auth.Token, "t0k")

	// Secrets are hidden when the configuration is printed.
	c = mustValidate(t, "leafnodes: {listen: 7422, authorization: {user: u, password: s3cret, users: [{user: v, password: s3cret}]}}")
	r := c.Redacted().LeafNodes.Authorization
	require.DeepEqual(t, r.Password, redactedSecret)
	require.DeepEqual(t, r.Users[0].Password, redactedSecret)
	require.DeepEqual(t, c.LeafNodes.Authorization.Password, "s3cret") // original untouched

	cases := []struct{ name, src, want string }{
		{"auth without listen", "leafnodes: {authorization: {token: x}}", "leafnodes: authorization, tls and compression configure leafnodes.listen, which is not set"},
		{"port", "leafnodes: {listen: 70000}", "leafnodes.listen: port 70000 out of range"},
		{"compression", "leafnodes: {listen: 7422, compression: zip}", `leafnodes.compression: "zip" is not one of`},
		{"account", "leafnodes: {listen: 7422, authorization: {user: u, password: p, account: NOPE}}", `leafnodes.authorization.account: "NOPE" is not listed under accounts`},
		{"token and users", "leafnodes: {listen: 7422, authorization: {token: t, users: [{user: u, password: p}]}}", "leafnodes.authorization: auth: invalid config: token cannot be combined with users"},
		{"user account", "leafnodes: {listen: 7422, authorization: {users: [{user: u, password: p, account: NOPE}]}}", `unknown account "NOPE"`},
		{"permissions", "leafnodes: {listen: 7422, authorization: {users: [{user: u, password: p, permissions: {publish: a}}]}}", "leafnodes.authorization.users[0].permissions: permissions for leaf users are not supported yet"},
		{"tls without cert", "leafnodes: {listen: 7422, tls: {verify: true}}", "leafnodes.tls.cert_file: missing"},
		{"unknown key", "leafnodes: {listen: 7422, authorization: {pass: x}}", `unknown key "pass" (known keys: user, password, token, nkey, account, users, timeout)`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.src))
			if err == nil {
				c.SetDefaults(testEnv)
				err = c.Validate()
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

// TestLeafListenBetweenLeafs attaches two leafbox gateways to one
// leafbox: a message from one gateway reaches a subscriber on the other
// through the hub, and a queue group with members on both gateways and
// none on the hub gets each message exactly once, served on the
// publisher's gateway when it has a member.
func TestLeafListenBetweenLeafs(t *testing.T) {
	hub := startApp(t, "http_port: 0\nserver_name: hub-box\nleafnodes: {listen: '127.0.0.1:-1'}\n", Flags{})
	gwConf := "http_port: 0\nserver_name: %s\nleafnodes: {remotes: [{url: 'nats-leaf://%s'}]}\n"
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var links []*leaf.Link
	var clients []*nats.Conn
	for _, name := range []string{"gw-1", "gw-2"} {
		gw := startApp(t, fmt.Sprintf(gwConf, name, hub.LeafListener().Addr()), Flags{})
		require.NoError(t, gw.node.Link(0).WaitConnected(ctx))
		links = append(links, gw.node.Link(0))
		clients = append(clients, natsConnect(t, "nats://"+gw.Addr().String()))
	}
	waitLeafs(t, hub, "two gateways", func(ls []leaf.AcceptedStatus) bool { return len(ls) == 2 })
	// flush waits until the gateways' interest reached the hub and the
	// hub's (which now includes the other gateway's) reached them.
	flush := func() {
		t.Helper()
		for _, c := range clients {
			require.NoError(t, c.Flush())
		}
		for _, l := range links {
			require.NoError(t, l.Flush(ctx))
		}
		require.NoError(t, hub.LeafListener().Flush(ctx))
		for _, l := range links {
			require.NoError(t, l.Flush(ctx))
		}
	}

	// gw-1 → hub → gw-2.
	sub, err := clients[1].SubscribeSync("east.>")
	require.NoError(t, err)
	flush()
	require.NoError(t, clients[0].Publish("east.temp", []byte("7")))
	if m := nextMsg(t, sub); m.Subject != "east.temp" || string(m.Data) != "7" {
		t.Fatalf("gw-2 got %q %q", m.Subject, m.Data)
	}

	// Queue group on both gateways, publisher on the hub.
	var members []*nats.Subscription
	for _, c := range clients {
		s, err := c.QueueSubscribeSync("job", "workers")
		require.NoError(t, err)
		members = append(members, s)
	}
	flush()
	hc := natsConnect(t, "nats://"+hub.Addr().String())
	const n = 20
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprint("j", i)
		require.NoError(t, hc.Publish("job", []byte(want[i])))
	}
	got := drainQueue(t, n, flush, members...)
	slices.Sort(got)
	slices.Sort(want)
	require.DeepEqual(t, got, want)

	// Publishers on the gateways: the hub relays each gateway's queue
	// interest to the other as queue interest, so each gateway serves its
	// publishers with its own member, and no message is delivered twice.
	for i := range n {
		for g, c := range clients {
			require.NoError(t, c.Publish("job", []byte(fmt.Sprint(g, "-", i))))
		}
	}
	flush()
	for g, m := range members {
		for range n {
			if d := string(nextMsg(t, m).Data); !strings.HasPrefix(d, fmt.Sprint(g, "-")) {
				t.Fatalf("gw-%d's member got %q from the other gateway", g+1, d)
			}
		}
		if k, _, _ := m.Pending(); k != 0 {
			t.Fatalf("gw-%d's member got %d more: duplicates", g+1, k)
		}
	}
}

// TestLeafListenCompression attaches leafbox gateways with every kind of
// compression pairing: the modes agree on both sides and messages cross
// both ways.
func TestLeafListenCompression(t *testing.T) {
	cases := []struct{ hub, gw, want string }{
		{"off", "s2_auto", "off"},
		{"s2_fast", "accept", "s2_fast"},
		{"accept", "s2_best", "s2_best"},
		{"s2_better", "s2_uncompressed", "s2_better"}, // each side writes at its own level
		{"s2_auto", "off", "off"},
	}
	for _, tc := range cases {
		t.Run(tc.hub+"/"+tc.gw, func(t *testing.T) {
			hub := startApp(t, fmt.Sprintf("http_port: 0\nleafnodes: {listen: '127.0.0.1:-1', compression: %s}\n", tc.hub), Flags{})
			gw := startApp(t, fmt.Sprintf("http_port: 0\nleafnodes: {remotes: [{url: 'nats-leaf://%s', compression: %s}]}\n",
				hub.LeafListener().Addr(), tc.gw), Flags{})
			link := gw.node.Link(0)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			require.NoError(t, link.WaitConnected(ctx))
			waitLeafs(t, hub, "the gateway", func(ls []leaf.AcceptedStatus) bool { return len(ls) == 1 })
			require.DeepEqual(t, hub.LeafListener().Leafs()[0].Compression, tc.want)

			hc := natsConnect(t, "nats://"+hub.Addr().String())
			gc := natsConnect(t, "nats://"+gw.Addr().String())
			up, err := hc.SubscribeSync("up")
			require.NoError(t, err)
			down, err := gc.SubscribeSync("down")
			require.NoError(t, err)
			require.NoError(t, hc.Flush())
			require.NoError(t, gc.Flush())
			require.NoError(t, link.Flush(ctx))
			require.NoError(t, hub.LeafListener().Flush(ctx))
			payload := []byte(strings.Repeat("compressible ", 200))
			require.NoError(t, gc.Publish("up", payload))
			require.NoError(t, hc.Publish("down", payload))
			require.DeepEqual(t, nextMsg(t, up).Data, payload)
			require.DeepEqual(t, nextMsg(t, down).Data, payload)
		})
	}
}

// BenchmarkLeafListenForward measures messages from a leafbox gateway's
// client, over its link to a leafbox leafnode port, to a subscriber there
// (128-byte payloads; the link compresses as configured by mode).
func BenchmarkLeafListenForward(b *testing.B) {
	for _, mode := range []string{"off", "s2_fast"} {
		b.Run(mode, func(b *testing.B) {
			hub, err := benchApp(fmt.Sprintf("http_port: 0\nleafnodes: {listen: '127.0.0.1:-1', compression: %s}\n", mode))
			if err != nil {
				b.Fatal(err)
			}
			defer hub.Shutdown(context.Background())
			gw, err := benchApp(fmt.Sprintf("http_port: 0\nleafnodes: {remotes: [{url: 'nats-leaf://%s', compression: %s}]}\n", hub.LeafListener().Addr(), mode))
			if err != nil {
				b.Fatal(err)
			}
			defer gw.Shutdown(context.Background())
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			link := gw.node.Link(0)
			if err := link.WaitConnected(ctx); err != nil {
				b.Fatal(err)
			}
			hc, err := nats.Connect("nats://" + hub.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer hc.Close()
			gc, err := nats.Connect("nats://" + gw.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer gc.Close()
			done := make(chan struct{})
			count, target := 0, b.N
			_, err = hc.Subscribe("bench", func(*nats.Msg) {
				count++
				if count == target {
					close(done)
				}
			})
			if err != nil {
				b.Fatal(err)
			}
			_ = hc.Flush()
			_ = link.Flush(ctx)
			payload := make([]byte, 128)
			b.SetBytes(int64(len(payload)))
			b.ResetTimer()
			for range b.N {
				if err := gc.Publish("bench", payload); err != nil {
					b.Fatal(err)
				}
			}
			select {
			case <-done:
			case <-time.After(time.Minute):
				b.Fatalf("got %d of %d", count, b.N)
			}
		})
	}
}

// benchApp builds and starts an App on free ports.
func benchApp(src string) (*App, error) {
	c, err := Parse([]byte("jetstream: false\n" + src))
	if err != nil {
		return nil, err
	}
	Overrides{Host: ptr("127.0.0.1"), Port: ptr(-1)}.Apply(c)
	c.SetDefaults(testEnv)
	a, err := Build(c, Flags{})
	if err != nil {
		return nil, err
	}
	return a, a.Start()
}

// TestLeafListenNatsServerTLS attaches a nats-server leaf over TLS: it
// verifies leafbox's certificate and presents its own, which leafbox
// verifies, and authenticates with a token.
func TestLeafListenNatsServerTLS(t *testing.T) {
	dir := t.TempDir()
	cert, key := writeCert(t, dir)
	a := startApp(t, fmt.Sprintf("http_port: 0\nleafnodes: {listen: '127.0.0.1:-1', authorization: {token: t0k},"+
		" tls: {cert_file: %q, key_file: %q, ca_file: %q, verify: true}}\n", cert, key, cert), Flags{})
	_, port, _ := strings.Cut(a.LeafListener().Addr().String(), ":")
	leafSrv := leaftest.StartHub(t, leaftest.HubOptions{Name: "ns-tls",
		Leaf: fmt.Sprintf(`remotes: [{url: "tls://t0k@localhost:%s", tls: {ca_file: %q, cert_file: %q, key_file: %q}}]`, port, cert, cert, key)})
	waitLeafs(t, a, "the TLS leaf", func(ls []leaf.AcceptedStatus) bool { return len(ls) == 1 })

	nc := natsConnect(t, leafSrv.ClientURL())
	down, err := nc.SubscribeSync("down")
	require.NoError(t, err)
	require.NoError(t, nc.Flush())
	waitLeafs(t, a, "LS+ down", hasLeafSubject("down", true))
	gw := natsConnect(t, "nats://"+a.Addr().String())
	require.NoError(t, gw.Publish("down", []byte("secure")))
	require.DeepEqual(t, string(nextMsg(t, down).Data), "secure")
}
