package server_test

import (
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/require"
	"github.com/leafbox/leafbox/core/server"
	"github.com/leafbox/leafbox/core/server/servertest"
)

func TestVarzAndInfoCarryLeafboxBuild(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567-dirty"
	const date = "2026-12-01T20:55:00Z"
	s := servertest.Start(t, server.Options{BuildVersion: "v1.4.0", BuildCommit: commit, BuildDate: date})
	check := func(when string) {
		t.Helper()
		v := s.Varz()
		// "version" stays the nats-server level clients gate features on.
		if v.Version != server.Version || v.LeafboxVersion != "v1.4.0" || v.GitCommit != commit || v.BuildDate != date {
			t.Fatalf("%s: /varz version %q leafbox_version %q git_commit %q build_date %q", when, v.Version, v.LeafboxVersion,
				v.GitCommit, v.BuildDate)
		}
		c := servertest.Dial(t, s)
		info := c.Expect("INFO ")
		c.Close()
		if !strings.Contains(info, `"version":"`+server.Version+`"`) || !strings.Contains(info, `"git_commit":"`+commit+`"`) {
			t.Fatalf("%s: INFO %s", when, info)
		}
	}
	check("at start")
	// A reload builds new options from the configuration, which knows
	// nothing of the build; the build stays.
	require.NoError(t, s.Reload(server.Options{Host: "127.0.0.1", Port: server.RandomPort}))
	check("after a reload")
}
