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

func TestServerCommandBindsLoopbackAndChosenPorts(t *testing.T) {
	for _, style := range []serverStyle{styleLeafbox, styleNATS} {
		for _, sync := range []syncMode{syncDefault, syncAlways, syncInterval} {
			setup, err := serverCommand(style, sync, "", "/tmp/x")
			if err != nil {
				t.Fatalf("%s, sync %s: %v", style, sync, err)
			}
			args := setup.args
			if !slices.Contains(args, "127.0.0.1") || !slices.Contains(args, "/tmp/x") || slices.Contains(args, "4222") {
				t.Errorf("%s, sync %s: args %q must bind 127.0.0.1, name the ports dir and fix no port", style, sync, args)
			}
			if n := strings.Count(strings.Join(args, " "), "-1"); n != 2 {
				t.Errorf("%s, sync %s: args %q: want -1 for both the client and the monitoring port", style, sync, args)
			}
		}
	}
	if _, err := serverCommand("mosquitto", syncDefault, "", "/tmp/x"); err == nil {
		t.Error("unknown style: no error")
	}
}

func TestServerCommandJetStream(t *testing.T) {
	tests := []struct {
		style      serverStyle
		sync       syncMode
		wantArgs   []string // wantArgs must appear in this order at the end of the arguments.
		wantConfig string
	}{
		{styleLeafbox, syncDefault, []string{"--jetstream", "--store-dir", "/w/s0/store"}, ""},
		{styleNATS, syncDefault, []string{"-js", "-sd", "/w/s0/store"}, ""},
		{styleLeafbox, syncAlways, []string{"--jetstream", "--config", "/w/s0/leafbox.yaml"},
			"jetstream:\n  store_dir: \"/w/s0/store\"\n  sync_interval: \"always\"\n"},
		{styleLeafbox, syncInterval, []string{"--jetstream", "--config", "/w/s0/leafbox.yaml"},
			"jetstream:\n  store_dir: \"/w/s0/store\"\n  sync_interval: \"2m\"\n"},
		{styleNATS, syncAlways, []string{"--config", "/w/s0/nats-server.conf"},
			"jetstream {\n  store_dir: \"/w/s0/store\"\n  sync_interval: \"always\"\n}\n"},
		{styleNATS, syncInterval, []string{"--config", "/w/s0/nats-server.conf"},
			"jetstream {\n  store_dir: \"/w/s0/store\"\n  sync_interval: \"2m\"\n}\n"},
	}
	for _, tc := range tests {
		t.Run(string(tc.style)+" "+tc.sync.String(), func(t *testing.T) {
			setup, err := serverCommand(tc.style, tc.sync, "", "/w/s0")
			if err != nil {
				t.Fatal(err)
			}
			if n := len(setup.args); n < len(tc.wantArgs) || !slices.Equal(setup.args[n-len(tc.wantArgs):], tc.wantArgs) {
				t.Errorf("args %q, want them to end with %q", setup.args, tc.wantArgs)
			}
			if setup.config != tc.wantConfig {
				t.Errorf("config %q, want %q", setup.config, tc.wantConfig)
			}
			if (setup.configPath == "") != (tc.wantConfig == "") {
				t.Errorf("config path %q for config %q", setup.configPath, tc.wantConfig)
			}
			if slices.Contains(setup.args, "--jetstream=false") {
				t.Errorf("args %q turn JetStream off", setup.args)
			}
		})
	}
}

func TestServerCommandQuotesPaths(t *testing.T) {
	setup, err := serverCommand(styleNATS, syncAlways, "", `/tmp/a "b"`)
	if err != nil {
		t.Fatal(err)
	}
	if want := `store_dir: "/tmp/a \"b\"/store"`; !strings.Contains(setup.config, want) {
		t.Errorf("config %q lacks %q", setup.config, want)
	}
}

func TestServerLabel(t *testing.T) {
	for _, tc := range []struct {
		sync syncMode
		want string
		dir  string
	}{
		{syncDefault, "leafbox", "default"},
		{syncAlways, "leafbox (sync always)", "always"},
		{syncInterval, "leafbox (sync every 2m)", "sync2m"},
	} {
		if got := serverLabel("leafbox", tc.sync); got != tc.want {
			t.Errorf("serverLabel(%q) = %q, want %q", tc.sync, got, tc.want)
		}
		if got := dirName(tc.sync); got != tc.dir {
			t.Errorf("dirName(%q) = %q, want %q", tc.sync, got, tc.dir)
		}
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
