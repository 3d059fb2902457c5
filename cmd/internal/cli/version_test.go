package cli

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestParseBuildInfo(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	const vcsTime = "2026-11-30T08:15:00Z"
	vcs := func(revision, modified string) *debug.BuildInfo {
		info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/leafbox/leafbox", Version: "(devel)"}}
		if revision != "" {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: "vcs", Value: "git"},
				debug.BuildSetting{Key: "vcs.revision", Value: revision},
				debug.BuildSetting{Key: "vcs.time", Value: vcsTime})
		}
		if modified != "" {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: "vcs.modified", Value: modified})
		}
		return info
	}
	platform := runtime.GOOS + "/" + runtime.GOARCH
	cases := []struct {
		name                        string
		info                        *debug.BuildInfo
		ldVersion, ldCommit, ldDate string
		wantVersion                 string
		wantCommit                  string
		wantDate                    string
		wantString                  string
	}{
		{name: "no build info", wantVersion: "devel", wantCommit: "unknown",
			wantString: "devel (commit unknown, " + runtime.Version() + ", " + platform + ")"},
		{name: "go build in a clean checkout", info: vcs(rev, "false"), wantVersion: "devel", wantCommit: rev, wantDate: vcsTime,
			wantString: "devel (commit 0123456789ab, built " + vcsTime + ", go1.26.0, " + platform + ")"},
		{name: "go build with uncommitted changes", info: vcs(rev, "true"), wantVersion: "devel", wantCommit: rev + "-dirty",
			wantDate:   vcsTime,
			wantString: "devel (commit 0123456789ab-dirty, built " + vcsTime + ", go1.26.0, " + platform + ")"},
		{name: "no VCS information (go run, -buildvcs=false)", info: vcs("", ""), wantVersion: "devel", wantCommit: "unknown"},
		{name: "scripts/build stamps win", info: vcs(rev, "true"), ldVersion: "v1.4.0", ldCommit: "fedcba9876543210-dirty",
			ldDate: "2026-12-01T20:55:00Z", wantVersion: "v1.4.0", wantCommit: "fedcba9876543210-dirty", wantDate: "2026-12-01T20:55:00Z",
			wantString: "v1.4.0 (commit fedcba987654-dirty, built 2026-12-01T20:55:00Z, go1.26.0, " + platform + ")"},
		{name: "scripts/build stamps without VCS information", info: vcs("", ""), ldVersion: "v1.4.0", ldCommit: rev,
			ldDate: "2026-12-01T20:55:00Z", wantVersion: "v1.4.0", wantCommit: rev, wantDate: "2026-12-01T20:55:00Z"},
		{name: "a stamped version keeps the toolchain's commit", info: vcs(rev, "false"), ldVersion: "v1.4.0",
			wantVersion: "v1.4.0", wantCommit: rev, wantDate: vcsTime},
		{name: "go install module@version", info: func() *debug.BuildInfo {
			info := vcs("", "")
			info.Main.Version = "v1.3.2"
			return info
		}(), wantVersion: "v1.3.2", wantCommit: "unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bi := parseBuildInfo(tc.info, tc.ldVersion, tc.ldCommit, tc.ldDate)
			if bi.Version != tc.wantVersion || bi.Commit != tc.wantCommit || bi.Date != tc.wantDate {
				t.Fatalf("version %q commit %q date %q, want %q %q %q", bi.Version, bi.Commit, bi.Date,
					tc.wantVersion, tc.wantCommit, tc.wantDate)
			}
			if bi.Platform != platform {
				t.Fatalf("platform %q", bi.Platform)
			}
			if tc.wantString != "" && bi.String() != tc.wantString {
				t.Fatalf("String() = %q, want %q", bi.String(), tc.wantString)
			}
		})
	}
}
