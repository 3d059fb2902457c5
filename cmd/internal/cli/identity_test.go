package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/leafbox/leafbox/leaf/identity"
	"github.com/leafbox/leafbox/store/vfs"
)

// TestConfigShowsIdentity: config print and check show the gateway
// identity kept in the store directory and the server name derived from
// it, create nothing, and refuse a damaged identity file.
func TestConfigShowsIdentity(t *testing.T) {
	store := t.TempDir()
	path := writeFile(t, "gw.yaml", "jetstream: {store_dir: "+store+"}\n")
	idPath := filepath.Join(store, "state", "identity.nk")

	stdout, stderr, code := runCLI(t, "config", "print", path)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "# identity: none yet; the first run generates "+idPath)
	if m := printed(t, stdout); m["server_name"] != nil {
		t.Fatalf("server_name %v before the identity exists", m["server_name"])
	}
	if _, err := os.Stat(idPath); !os.IsNotExist(err) {
		t.Fatalf("config print created the identity: %v", err)
	}

	id, err := identity.Open(vfs.OS, idPath)
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCLI(t, "config", "print", path)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "# identity: "+id.PublicKey()+" ("+idPath+")")
	if m := printed(t, stdout); m["server_name"] != id.ServerName() {
		t.Fatalf("server_name %v, want %s\n%s", m["server_name"], id.ServerName(), stdout)
	}
	stdout, stderr, code = runCLI(t, "config", "check", path)
	requireCode(t, code, 0, stderr)
	requireContains(t, "stdout", stdout, "identity "+id.PublicKey())

	if err := os.WriteFile(idPath, []byte("damaged"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = runCLI(t, "config", "check", path)
	requireCode(t, code, 1, stderr)
	requireContains(t, "stderr", stderr, idPath, "not an NKey seed")
}

// TestConfigPrintShowsMQTTDefaults: config print shows an MQTT bridge's
// default session_expiry and client id, the latter from server_name or,
// without one, from the identity's derived server name.
func TestConfigPrintShowsMQTTDefaults(t *testing.T) {
	bridges := "bridges:\n  mqtt:\n    - {name: site, server: broker, outbound: [{from: a.>}]}\n"
	mqttEntry := func(stdout string) map[string]any {
		t.Helper()
		m := printed(t, stdout)
		b, _ := m["bridges"].(map[string]any)
		list, _ := b["mqtt"].([]any)
		if len(list) != 1 {
			t.Fatalf("bridges.mqtt not printed:\n%s", stdout)
		}
		return list[0].(map[string]any)
	}

	path := writeFile(t, "named.yaml", "server_name: gw1\n"+bridges)
	stdout, stderr, code := runCLI(t, "config", "print", path)
	requireCode(t, code, 0, stderr)
	entry := mqttEntry(stdout)
	if entry["client_id"] != "leafbox-gw1-site" || entry["session_expiry"] != "24h0m0s" {
		t.Fatalf("mqtt entry %v\n%s", entry, stdout)
	}

	store := t.TempDir()
	id, err := identity.Open(vfs.OS, filepath.Join(store, "state", "identity.nk"))
	if err != nil {
		t.Fatal(err)
	}
	path = writeFile(t, "derived.yaml", "jetstream: {store_dir: "+store+"}\n"+bridges)
	stdout, stderr, code = runCLI(t, "config", "print", path)
	requireCode(t, code, 0, stderr)
	if entry := mqttEntry(stdout); entry["client_id"] != "leafbox-"+id.ServerName()+"-site" {
		t.Fatalf("mqtt entry %v, want client_id leafbox-%s-site\n%s", entry, id.ServerName(), stdout)
	}
}
