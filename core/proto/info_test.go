package proto

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// keysOf returns the top-level keys of a JSON object.
func keysOf(t *testing.T, js []byte) map[string]bool {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(js, &m); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for k := range m {
		keys[k] = true
	}
	return keys
}

// TestInfoAlwaysPresent checks which INFO fields a zero Info still carries:
// the ones nats-server never omits.
func TestInfoAlwaysPresent(t *testing.T) {
	js, err := json.Marshal(Info{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{
		"server_id": true, "server_name": true, "version": true, "proto": true, "go": true,
		"host": true, "port": true, "headers": true, "max_payload": true,
	}
	if got := keysOf(t, js); !reflect.DeepEqual(got, want) {
		t.Fatalf("zero Info keys %v, want %v", got, want)
	}
}

// TestInfoHubSample decodes an INFO as a nats-server hub sends it on its
// leafnode port and its post-CONNECT INFO, and re-encodes it without loss.
func TestInfoHubSample(t *testing.T) {
	const hub = `{"server_id":"NCUG7Z3QZ5V2HM","server_name":"hub1","version":"2.15.2","proto":3,"git_commit":"abc",` +
		`"go":"go1.25","host":"0.0.0.0","port":7422,"headers":true,"auth_required":true,"max_payload":1048576,` +
		`"jetstream":true,"client_id":5,"nonce":"w7b2YQk2eAv5Ltw","domain":"hub","compression":"s2_auto",` +
		`"info_on_connect":true,"api_lvl":2,"leafnode_urls":["10.0.0.1:7422"]}`
	var info Info
	if err := json.Unmarshal([]byte(hub), &info); err != nil {
		t.Fatal(err)
	}
	if info.ClientID != 5 || !info.InfoOnConnect || info.Compression != "s2_auto" || info.Proto != 3 ||
		info.Nonce != "w7b2YQk2eAv5Ltw" || len(info.LeafNodeURLs) != 1 || info.APILevel != 2 {
		t.Fatalf("decoded %+v", info)
	}
	js, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keysOf(t, js), keysOf(t, []byte(hub)); !reflect.DeepEqual(got, want) {
		t.Fatalf("re-encoded keys %v, want %v", got, want)
	}

	const connectInfo = `{"server_id":"N","server_name":"hub1","version":"2.15.2","proto":3,"go":"go","host":"h","port":1,` +
		`"headers":true,"max_payload":1,"connect_info":true,"remote_account":"$G","acc_is_sys":false,` +
		`"import":{"allow":["foo.>"]},"export":{"deny":["$SYS.>"]}}`
	info = Info{}
	if err := json.Unmarshal([]byte(connectInfo), &info); err != nil {
		t.Fatal(err)
	}
	if !info.ConnectInfo || info.RemoteAccount != "$G" || info.Import.Allow[0] != "foo.>" || info.Export.Deny[0] != "$SYS.>" {
		t.Fatalf("decoded %+v", info)
	}
}

func TestParseConnectDefaults(t *testing.T) {
	c, err := ParseConnect([]byte(`{"name":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Verbose || !c.Pedantic || !c.Echo || c.Name != "x" {
		t.Fatalf("defaults not applied: %+v", c)
	}
	c, err = ParseConnect([]byte(`{"verbose":false,"pedantic":false,"tls_required":false,"echo":false,` +
		`"name":"svc","lang":"go","version":"1.55.0","protocol":1,"headers":true,"no_responders":true,` +
		`"user":"u","pass":"p","auth_token":"t","nkey":"UA","jwt":"ey","sig":"s","account":"A","new_account":true}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Connect{Name: "svc", Lang: "go", Version: "1.55.0", Protocol: 1, Headers: true, NoResponders: true,
		User: "u", Pass: "p", AuthToken: "t", Nkey: "UA", JWT: "ey", Sig: "s", Account: "A", NewAccount: true}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	if _, err := ParseConnect([]byte("{")); err == nil {
		t.Fatal("bad JSON accepted")
	}
}

// TestConnectLeafEncoding checks the CONNECT a soliciting leaf writes: the
// leaf fields under nats-server's names, and no "lang".
func TestConnectLeafEncoding(t *testing.T) {
	c := Connect{
		Echo: true, Version: "2.11.0", ServerID: "NLEAF", Name: "edge-1", Headers: true, JetStream: true,
		Domain: "edge", RemoteAccount: "$G", CompressMode: "off", Protocol: 1, DenyPub: []string{"$JS.API.>"},
		Isolate: true, User: "leaf", Pass: "s3cret",
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(js), `"lang"`) || strings.Contains(string(js), `"gateway"`) || strings.Contains(string(js), `"is_hub"`) {
		t.Fatalf("leaf CONNECT carries a client-only field: %s", js)
	}
	want := map[string]bool{
		"verbose": true, "pedantic": true, "tls_required": true, "echo": true,
		"version": true, "server_id": true, "name": true, "headers": true, "jetstream": true, "domain": true,
		"remote_account": true, "compress_mode": true, "protocol": true, "deny_pub": true, "isolate": true,
		"user": true, "pass": true,
	}
	if got := keysOf(t, js); !reflect.DeepEqual(got, want) {
		t.Fatalf("keys %v\nwant %v", got, want)
	}
	back, err := ParseConnect(js)
	if err != nil || !reflect.DeepEqual(back, c) {
		t.Fatalf("round trip %+v, %v", back, err)
	}
}
