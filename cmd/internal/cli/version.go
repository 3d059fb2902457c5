package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version, commit and date are set at link time by scripts/build:
//
//	-ldflags "-X github.com/leafbox/leafbox/cmd/internal/cli.version=v1.2.3
//	          -X github.com/leafbox/leafbox/cmd/internal/cli.commit=<sha>[-dirty]
//	          -X github.com/leafbox/leafbox/cmd/internal/cli.date=2026-12-01T20:55:00Z"
//
// date is the build date: the commit's date (or SOURCE_DATE_EPOCH), never
// the wall clock, so that two builds of one commit are the same bytes.
// When empty, the build information the Go toolchain records is used: the
// module version, and the VCS revision (vcs.revision, with "-dirty" when
// vcs.modified) and commit time (vcs.time), which `go build` records in a
// git checkout.
var version, commit, date string

// unknownCommit is the commit of a binary built without VCS information.
const unknownCommit = "unknown"

// buildInfo is what `leafbox version` and /varz report.
type buildInfo struct {
	Version  string // release or module version; "devel" for a local build
	Commit   string // VCS revision, "-dirty" appended for uncommitted changes; "unknown" when not recorded
	Date     string // build date (the commit's date, RFC 3339); "" when not recorded
	Go       string // Go toolchain version
	Platform string // GOOS/GOARCH
}

// readBuildInfo returns this binary's build information.
func readBuildInfo() buildInfo {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return parseBuildInfo(info, version, commit, date)
}

// parseBuildInfo combines the link-time stamps (ldVersion, ldCommit,
// ldDate; "" when not stamped) with the toolchain's build information (nil
// when the binary has none).
func parseBuildInfo(info *debug.BuildInfo, ldVersion, ldCommit, ldDate string) buildInfo {
	bi := buildInfo{
		Version:  ldVersion,
		Commit:   ldCommit,
		Date:     ldDate,
		Go:       runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	if info != nil {
		if bi.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			bi.Version = info.Main.Version
		}
		if info.GoVersion != "" {
			bi.Go = info.GoVersion
		}
		var revision, vcsTime string
		var modified bool
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				vcsTime = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
		if bi.Commit == "" && revision != "" {
			bi.Commit = revision
			if modified {
				bi.Commit += "-dirty"
			}
		}
		if bi.Date == "" {
			bi.Date = vcsTime
		}
	}
	if bi.Version == "" {
		bi.Version = "devel"
	}
	if bi.Commit == "" {
		bi.Commit = unknownCommit
	}
	return bi
}

// shortCommit is the commit cut to 12 hex digits, keeping "-dirty".
func (bi buildInfo) shortCommit() string {
	const n = 12
	rev, dirty := strings.CutSuffix(bi.Commit, "-dirty")
	if len(rev) > n {
		rev = rev[:n]
	}
	if dirty {
		rev += "-dirty"
	}
	return rev
}

// String is the one-line form: "v1.2.3 (commit 0123456789ab-dirty,
// built 2026-12-01T20:55:00Z, go1.26.0, linux/arm64)"; without a build
// date the "built" part is left out.
func (bi buildInfo) String() string {
	built := ""
	if bi.Date != "" {
		built = "built " + bi.Date + ", "
	}
	return fmt.Sprintf("%s (commit %s, %s%s, %s)", bi.Version, bi.shortCommit(), built, bi.Go, bi.Platform)
}

// dateOrUnknown is the build date for `leafbox version`.
func (bi buildInfo) dateOrUnknown() string {
	if bi.Date == "" {
		return "unknown"
	}
	return bi.Date
}

func versionString() string { return readBuildInfo().String() }

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, build date, Go version and platform",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi := readBuildInfo()
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "leafbox %s\ncommit:   %s\nbuilt:    %s\ngo:       %s\nplatform: %s\n",
				bi.Version, bi.Commit, bi.dateOrUnknown(), bi.Go, bi.Platform)
			return err
		},
	}
}
