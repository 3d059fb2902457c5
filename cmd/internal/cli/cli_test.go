package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// runCLI runs the command line in-process and returns its output and exit
// code.
func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Execute(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

func requireContains(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Fatalf("%s does not contain %q:\n%s", what, w, s)
		}
	}
}

func requireCode(t *testing.T, got, want int, stderr string) {
	t.Helper()
	if got != want {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", got, want, stderr)
	}
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestConfigCheckGood(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	path := writeFile(t, "good.yaml", "port: 4333\nauthorization: {users: [{user: a, password: b}]}\njetstream: true\n")
	stdout, stderr, code := runCLI(t, "config", "check", path)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "ok: "+path+": clients 0.0.0.0:4333, monitoring 127.0.0.1:8222, 1 user, 0 accounts, tls off, jetstream on")
	if stderr != "" {
		t.Fatalf("stderr not empty: %s", stderr)
	}
}

func TestConfigCheckBad(t *testing.T) {
	path := writeFile(t, "bad.yaml", "port: 4222\nmax_payload: lots\nauthorization:\n  tokn: x\n")
	stdout, stderr, code := runCLI(t, "config", "check", path)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr,
		path+":2: max_payload: invalid size \"lots\"",
		path+`:4: authorization.tokn: unknown key "tokn"`)
	if stdout != "" {
		t.Fatalf("stdout not empty: %s", stdout)
	}
}

func TestConfigCheckInvalidValues(t *testing.T) {
	path := writeFile(t, "bad.yaml", "port: 4222\n\nhttp_port: 4222\ntls:\n  cert_file: missing.pem\n  key_file: missing-key.pem\n")
	_, stderr, code := runCLI(t, "config", "check", path)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr,
		path+":3: http_port: 4222 is also the client port",
		path+":5: tls.cert_file: open "+filepath.Join(filepath.Dir(path), "missing.pem")+": no such file or directory")
}

func TestConfigCheckMissingFile(t *testing.T) {
	_, stderr, code := runCLI(t, "config", "check", "/nonexistent/leafbox.yaml")
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "no such file or directory")
}

func TestConfigCheckNeedsAFile(t *testing.T) {
	_, stderr, code := runCLI(t, "config", "check")
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "leafbox: accepts 1 arg(s), received 0")
}

func TestConfigCheckCountsLeafRemotes(t *testing.T) {
	path := writeFile(t, "leaf.yaml", "leafnodes: {remotes: [{url: nats-leaf://hub:7422}, {url: nats://hub2}]}\n")
	stdout, stderr, code := runCLI(t, "config", "check", path)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, ", 2 leafnode remotes\n")
	if strings.Contains(stdout, "note:") {
		t.Fatalf("config check still notes leafnodes:\n%s", stdout)
	}
}

// Every example shipped in deploy/examples must pass config check.
func TestDeployExamplesPassConfigCheck(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("STATE_DIRECTORY", "")
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "deploy", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 2 {
		t.Fatalf("want at least gateway.yaml and auth.yaml in deploy/examples, found %v", files)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			stdout, stderr, code := runCLI(t, "config", "check", f)
			requireCode(t, code, 0, stderr)
			requireContains(t, "stdout", stdout, "ok: ")
		})
	}
}

// printed parses the YAML that config print wrote.
func printed(t *testing.T, stdout string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal([]byte(stdout), &m); err != nil {
		t.Fatalf("config print output is not YAML: %v\n%s", err, stdout)
	}
	return m
}

func TestConfigPrintDefault(t *testing.T) {
	t.Setenv("HOME", "/home/someone")
	t.Setenv("STATE_DIRECTORY", "")
	stdout, stderr, code := runCLI(t, "config", "print")
	requireCode(t, code, 0, stderr)
	m := printed(t, stdout)
	for key, want := range map[string]any{
		"listen": "0.0.0.0", "port": 4222, "http": "127.0.0.1", "http_port": 8222,
		"max_payload": "1MiB", "ping_interval": "2m0s",
	} {
		if m[key] != want {
			t.Fatalf("%s = %#v, want %#v\n%s", key, m[key], want, stdout)
		}
	}
	js := m["jetstream"].(map[string]any)
	if js["enabled"] != true || js["store_dir"] != "/home/someone/.local/state/leafbox" {
		t.Fatalf("jetstream = %v", js)
	}
}

func TestFlagsOverrideConfigFile(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", "/var/lib/leafbox")
	path := writeFile(t, "gw.yaml", "listen: 10.1.1.1:5000\nhttp_port: 9000\nserver_name: file\nmax_payload: 2MB\njetstream: {store_dir: /file}\n")
	stdout, stderr, code := runCLI(t, "config", "print", path,
		"--addr", "127.0.0.1", "--port", "-1", "--http-port", "0", "--server-name", "flag", "--store-dir", "/flag")
	requireCode(t, code, 0, stderr)
	m := printed(t, stdout)
	for key, want := range map[string]any{
		"listen": "127.0.0.1", "port": -1, "http_port": 0, "server_name": "flag",
		"max_payload": "2MiB", // not overridden: the file's value stays
	} {
		if m[key] != want {
			t.Fatalf("%s = %#v, want %#v\n%s", key, m[key], want, stdout)
		}
	}
	if js := m["jetstream"].(map[string]any); js["store_dir"] != "/flag" || js["enabled"] != true {
		t.Fatalf("jetstream = %v", js)
	}

	// Flags not given leave the file alone; --jetstream=false turns it off.
	stdout, stderr, code = runCLI(t, "config", "print", path, "--jetstream=false")
	requireCode(t, code, 0, stderr)
	m = printed(t, stdout)
	if m["port"] != 5000 || m["http_port"] != 9000 || m["server_name"] != "file" {
		t.Fatalf("file values lost:\n%s", stdout)
	}
	if js := m["jetstream"].(map[string]any); js["enabled"] != false {
		t.Fatalf("jetstream = %v", js)
	}
}

func TestConfigPrintRedactsSecrets(t *testing.T) {
	path := writeFile(t, "auth.yaml", "authorization:\n  users:\n    - {user: a, password: hunter2}\naccounts:\n  A: {users: [{user: b, password: swordfish}]}\n")
	stdout, stderr, code := runCLI(t, "config", "print", path)
	requireCode(t, code, 0, stderr)
	for _, secret := range []string{"hunter2", "swordfish"} {
		if strings.Contains(stdout, secret) {
			t.Fatalf("config print shows a password:\n%s", stdout)
		}
	}
	requireContains(t, "stdout", stdout, "[REDACTED]")
}

func TestConfigPrintFlagError(t *testing.T) {
	_, stderr, code := runCLI(t, "config", "print", "--port", "99999")
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "leafbox: flag --port: port: 99999 is out of range")
}

func TestRunRejectsBadLeafRemoteURL(t *testing.T) {
	cases := []struct{ url, want string }{
		{"http://hub", `leafbox: flag --leaf-remote: leafnodes.remotes[0].url: URL "http://hub": scheme must be nats-leaf, nats or tls`},
		{"wss://hub:443", `leafbox: flag --leaf-remote: leafnodes.remotes[0].url: URL "wss://hub:443": websocket leafnodes are not supported yet`},
	}
	for _, tc := range cases {
		_, stderr, code := runCLI(t, "run", "--leaf-remote", tc.url)
		requireCode(t, code, 1, stderr)
		requireContains(t, "stderr", stderr, tc.want)
	}
}

func TestRunRejectsBadArguments(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--log-level", "loud"}, `leafbox: --log-level: "loud" is not one of debug, info, warn, error`},
		{[]string{"run", "--log-format", "xml"}, `leafbox: --log-format: "xml" is not one of text, json`},
		{[]string{"run", "--config", "/nonexistent.yaml"}, "leafbox: open /nonexistent.yaml: no such file or directory"},
		{[]string{"run", "--port", "x"}, `leafbox: invalid argument "x" for "--port"`},
		{[]string{"run", "extra"}, `leafbox: unknown command "extra" for "leafbox run"`},
		{[]string{"frobnicate"}, `leafbox: unknown command "frobnicate" for "leafbox"`},
	}
	for _, tc := range cases {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, stderr, code := runCLI(t, tc.args...)
			requireCode(t, code, 1, stderr)
			requireContains(t, "stderr", stderr, tc.want)
		})
	}
}

func TestRunWithBadConfigPrintsEveryProblem(t *testing.T) {
	path := writeFile(t, "bad.yaml", "port: 70000\nping_max: -1\n")
	_, stderr, code := runCLI(t, "run", "--config", path)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr,
		"leafbox: "+path+":1: port: 70000 is out of range",
		"leafbox: "+path+":2: ping_max: must not be negative")
}

func TestVersion(t *testing.T) {
	stdout, stderr, code := runCLI(t, "version")
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "leafbox ", "commit:", "go:       go1.", "platform: ")

	stdout, _, code = runCLI(t, "--version")
	requireCode(t, code, 0, "")
	requireContains(t, "stdout", stdout, "leafbox ")
}

func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish", "powershell"} {
		stdout, stderr, code := runCLI(t, "completion", shell)
		requireCode(t, code, 0, stderr)
		requireContains(t, "stdout", stdout, "leafbox")
	}
}

func TestHelpListsCommands(t *testing.T) {
	stdout, stderr, code := runCLI(t, "--help")
	requireCode(t, code, 0, stderr)
	requireContains(t, "help", stdout, "run", "config", "uplink", "version", "completion")

	stdout, _, _ = runCLI(t, "run", "--help")
	requireContains(t, "run help", stdout, "--config", "--addr", "--port", "--http-port", "--server-name",
		"--jetstream", "--store-dir", "--leaf-remote", "--log-level", "--ports-file-dir", "SIGUSR2", "SIGHUP")
}

// config check and config print say where streams and outboxes will live
// and the JetStream limits, also for files without a jetstream block.
func TestConfigCheckSaysWhereDataLives(t *testing.T) {
	state := t.TempDir()
	t.Setenv("STATE_DIRECTORY", state)
	auth := filepath.Join("..", "..", "..", "deploy", "examples", "auth.yaml")
	empty := writeFile(t, "empty.yaml", "")
	gw := writeFile(t, "gw.yaml", "leafnodes: {remotes: [{url: nats://hub}]}\nuplinks: [{name: t, subjects: [t.>], hub_subject_prefix: s.}]\n")
	off := writeFile(t, "off.yaml", "jetstream: {enabled: false}\n")
	streams := "jetstream on: streams in " + filepath.Join(state, "streams") + "\n"
	for _, path := range []string{auth, empty} {
		stdout, stderr, code := runCLI(t, "config", "check", path)
		requireCode(t, code, 0, stderr)
		requireContains(t, "stdout", stdout, "jetstream on (store "+state+")", "\n  "+streams,
			"\n  max_memory_store ", ": default, 75% of ", "\n  max_file_store ")
		stdout, stderr, code = runCLI(t, "config", "print", path)
		requireCode(t, code, 0, stderr)
		requireContains(t, "stdout", stdout, "\n# "+streams, "\n# max_file_store ")
	}
	stdout, stderr, code := runCLI(t, "config", "check", gw)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "\n  uplink outboxes in "+filepath.Join(state, "outbox")+"\n",
		"less the 32MiB the uplinks' min_free_disk keeps free")
	stdout, stderr, code = runCLI(t, "config", "check", off)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, ", jetstream off\n  jetstream off\n")
}

// config check catches what run would fail on, at file:line; run names
// the store directory's problem, not the first file that fails in it.
func TestConfigCheckCatchesWhatRunFailsOn(t *testing.T) {
	file := writeFile(t, "afile", "x")
	path := writeFile(t, "gw.yaml", "listen: 192.0.2.1\njetstream:\n  store_dir: '"+file+"'\n")
	_, stderr, code := runCLI(t, "config", "check", path)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr,
		path+":1: listen: 192.0.2.1 is not an address of this machine\n",
		path+":3: jetstream.store_dir: "+file+" is not a directory\n")

	typo := writeFile(t, "typo.yaml", "max_paylod: 1MB\n")
	_, stderr, code = runCLI(t, "config", "check", typo)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, typo+`:1: max_paylod: unknown key "max_paylod" (did you mean "max_payload"?)`)

	_, stderr, code = runCLI(t, "run", "--addr", "127.0.0.1", "--port", "-1", "--http-port", "0", "--store-dir", file)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, "flag --store-dir: jetstream.store_dir: "+file+" is not a directory")
	if strings.Contains(stderr, "clock") {
		t.Fatalf("run names the clock:\n%s", stderr)
	}
}

// TestConfigCheckRejectsUnsafeNames: every name that becomes a file name
// or a subject token follows one rule (jsapi.CheckName), so config check
// refuses what run would fail on, with the file and line.
func TestConfigCheckRejectsUnsafeNames(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	path := writeFile(t, "names.yaml", "leafnodes: {remotes: [{url: 'nats://127.0.0.1:1'}]}\n"+
		"uplinks:\n"+
		"  - name: tel\n"+
		"    subjects: [t.>]\n"+
		"    hub_subject_prefix: s.\n"+
		"    stream: a/b\n"+
		"  - name: ..\n"+
		"    subjects: [u.>]\n"+
		"    hub_subject_prefix: v.\n"+
		"downlinks:\n"+
		"  - name: cmd\n"+
		"    stream: \"C\\0D\"\n"+
		"    durable: x\\y\n"+
		"    filter_subjects: [cmd.>]\n")
	stdout, stderr, code := runCLI(t, "config", "check", path)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr,
		path+`:6: uplinks[0].stream: "a/b" is not a stream name: must not contain '/'`,
		path+`:7: uplinks[1].name: ".." is not a valid name: must not contain '.'`,
		path+`:12: downlinks[0].stream: "C\x00D" is not a stream name: must not contain the control character U+0000`,
		path+`:13: downlinks[0].durable: "x\\y" is not a consumer name: must not contain '\\'`)
	if stdout != "" {
		t.Fatalf("stdout not empty: %s", stdout)
	}
}
