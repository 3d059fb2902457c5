package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestMain keeps the tests off the machine's configuration: no
// /etc/leafbox/leafbox.yaml, no $LEAFBOX_CONFIG, unless a test sets them.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "leafbox-cli-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	systemConfigFile = filepath.Join(dir, "etc", "leafbox.yaml") // absent
	os.Unsetenv(configEnv)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
