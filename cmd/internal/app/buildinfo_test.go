package app

import (
	"testing"

	"github.com/leafbox/leafbox/core/server"
)

func TestVarzReportsLeafboxBuild(t *testing.T) {
	a := startApp(t, "http_port: -1", Flags{Version: "v1.4.0", Commit: "0123456789abcdef-dirty", BuildDate: "2026-12-01T20:55:00Z"})
	var v map[string]any
	getJSON(t, "http://"+a.MonitorAddr().String()+"/varz", &v)
	if v["version"] != server.Version || v["leafbox_version"] != "v1.4.0" || v["git_commit"] != "0123456789abcdef-dirty" ||
		v["build_date"] != "2026-12-01T20:55:00Z" {
		t.Fatalf("/varz version %v, leafbox_version %v, git_commit %v, build_date %v",
			v["version"], v["leafbox_version"], v["git_commit"], v["build_date"])
	}
}
