package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

// TestMalformedInput sends every kind of bad input on its own connection
// and requires the exact -ERR, a closed connection, and a server that keeps
// serving a healthy client throughout.
func TestMalformedInput(t *testing.T) {
	s := servertest.Start(t, server.Options{MaxPayload: 64, MaxControlLine: 1024})
	healthy := connect(t, s)
	sub, _ := healthy.SubscribeSync("alive")
	require.NoError(t, healthy.Flush())

	cases := []struct {
		name, input, err string
	}{
		{"unknown op", "FOO bar\r\n", "Unknown Protocol Operation"},
		{"msg from client", "MSG a 1 0\r\n\r\n", "Unknown Protocol Operation"},
		{"bad pub size", "PUB a x\r\n", "Unknown Protocol Operation"},
		{"negative size", "PUB a -1\r\n", "Unknown Protocol Operation"},
		{"missing crlf", "PUB a 2\r\nabcd\r\n", "Unknown Protocol Operation"},
		{"header larger than total", "HPUB a 10 4\r\n", "Unknown Protocol Operation"},
		{"payload too big", "PUB a 65\r\n", "Maximum Payload Violation"},
		{"control line too long", "PUB " + strings.Repeat("a", 1100) + " 1\r\n", "maximum control line exceeded"},
		{"bad connect json", "CONNECT {nope\r\n", "Unknown Protocol Operation"},
		{"bad protocol", `CONNECT {"protocol":7}` + "\r\n", "invalid client protocol"},
		{"no responders without headers", `CONNECT {"no_responders":true,"headers":false}` + "\r\n", "no responders requires headers support"},
		{"account field", `CONNECT {"account":"X"}` + "\r\n", "Authorization Violation"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := servertest.Dial(t, s)
			c.Expect("INFO ")
			c.Send(tc.input)
			c.Expect("-ERR '" + tc.err + "'")
			c.ExpectClosed()
			require.NoError(t, healthy.Publish("alive", []byte(tc.name)))
			if m := nextMsg(t, sub); string(m.Data) != tc.name {
				t.Fatalf("healthy client got %q", m.Data)
			}
		})
	}
}

func TestInvalidSubjectKeepsConnection(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	c := servertest.Dial(t, s)
	c.Connect(`{"verbose":false,"pedantic":true}`)
	c.Send("SUB foo..bar 1\r\n")
	c.Expect("-ERR 'Invalid Subject'")
	c.Send("SUB foo.>.bar 2\r\n")
	c.Expect("-ERR 'Invalid Subject'")
	c.Send("PUB foo.* 0\r\n\r\n")
	c.Expect("-ERR 'Invalid Publish Subject'")
	c.Send("PING\r\n")
	c.Expect("PONG")
}

func TestHandshake(t *testing.T) {
	s := servertest.Start(t, server.Options{ServerName: "gw-1", JetStream: true, JetStreamAPILevel: 2})
	c := servertest.Dial(t, s)
	line := c.Expect("INFO ")
	var info map[string]any
	require.NoError(t, json.Unmarshal([]byte(strings.TrimPrefix(line, "INFO ")), &info))
	for _, k := range []string{"server_id", "server_name", "version", "proto", "go", "host", "port", "headers", "max_payload", "client_id", "client_ip", "jetstream"} {
		if _, ok := info[k]; !ok {
			t.Errorf("INFO lacks %q: %s", k, line)
		}
	}
	if info["server_name"] != "gw-1" || info["headers"] != true || info["proto"] != float64(1) || info["api_lvl"] != float64(2) {
		t.Errorf("INFO values: %s", line)
	}
	if _, ok := info["auth_required"]; ok {
		t.Errorf("auth_required sent without auth: %s", line)
	}
	// verbose: +OK after CONNECT, then PONG, then the connect INFO.
	c.Send(`CONNECT {"verbose":true,"protocol":1}` + "\r\nPING\r\n")
	c.Expect("+OK")
	c.Expect("PONG")
	connectInfo := c.Expect("INFO ")
	if !strings.Contains(connectInfo, `"connect_info":true`) || !strings.Contains(connectInfo, `"remote_account":"$G"`) {
		t.Errorf("connect INFO: %s", connectInfo)
	}
	c.Send("SUB a 1\r\n")
	c.Expect("+OK")
	c.Send("PUB a 2\r\nhi\r\n")
	c.Expect("+OK")
	c.Expect("MSG a 1 2")
	c.Expect("hi")
	// Case-insensitive verbs and tab separators.
	c.Send("sub\tb \t 2\r\npub b 1\r\nx\r\nping\r\n")
	c.Expect("+OK")
	c.Expect("+OK")
	c.Expect("MSG b 2 1")
	c.Expect("x")
	c.Expect("PONG")
}

func TestReservedReply(t *testing.T) {
	s := servertest.Start(t, server.Options{})
	c := servertest.Dial(t, s)
	c.Connect(`{"verbose":false,"pedantic":false}`)
	c.Send("PUB a $JS.ACK.x.y 0\r\n\r\n")
	c.Expect(`-ERR 'Permissions Violation for Publish with Reply of "$JS.ACK.x.y"'`)
	c.Send("PING\r\n")
	c.Expect("PONG")
}
