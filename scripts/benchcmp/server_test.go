package main

import (
	"slices"
	"strings"
	"testing"
)

func TestParsePortsFile(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		wantAddr    string
		wantMonitor string
		wantErr     string
	}{
		{"nats-server", `{"nats":["nats://127.0.0.1:42181"],"monitoring":["http://127.0.0.1:43847"]}`,
			"127.0.0.1:42181", "http://127.0.0.1:43847", ""},
		{"trailing slash and extra keys", `{"nats":["nats://127.0.0.1:4222"],"monitoring":["http://127.0.0.1:8222/"],"cluster":["nats://127.0.0.1:6222"]}`,
			"127.0.0.1:4222", "http://127.0.0.1:8222", ""},
		{"half written", `{"nats":["nats://127.0.0.1:42`, "", "", "ports file"},
		{"no client listener", `{"nats":[],"monitoring":["http://127.0.0.1:1"]}`, "", "", "no nats listener"},
		{"monitoring off", `{"nats":["nats://127.0.0.1:1"]}`, "", "", "no monitoring listener"},
		{"bad url", `{"nats":["127.0.0.1:1"],"monitoring":["http://127.0.0.1:1"]}`, "", "", "bad nats url"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			addr, mon, err := parsePortsFile([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || addr != tc.wantAddr || mon != tc.wantMonitor {
				t.Errorf("parsePortsFile = %q, %q, %v; want %q, %q", addr, mon, err, tc.wantAddr, tc.wantMonitor)
			}
		})
	}
}

func TestServerArgsBindLoopbackAndChosenPorts(t *testing.T) {
	for _, style := range []serverStyle{styleLeafbox, styleNATS} {
		args, err := serverArgs(style, "/tmp/x")
		if err != nil {
			t.Fatalf("%s: %v", style, err)
		}
		if !slices.Contains(args, "127.0.0.1") || !slices.Contains(args, "/tmp/x") || slices.Contains(args, "4222") {
			t.Errorf("%s: args %q must bind 127.0.0.1, name the ports dir and fix no port", style, args)
		}
		if n := strings.Count(strings.Join(args, " "), "-1"); n != 2 {
			t.Errorf("%s: args %q: want -1 for both the client and the monitoring port", style, args)
		}
	}
	if _, err := serverArgs("mosquitto", "/tmp/x"); err == nil {
		t.Error("unknown style: no error")
	}
}

func TestTail(t *testing.T) {
	if got := tail("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("tail = %q, want %q", got, "b\nc")
	}
	if got := tail("a", 5); got != "a" {
		t.Errorf("tail = %q, want %q", got, "a")
	}
}
