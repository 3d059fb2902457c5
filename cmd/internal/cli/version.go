package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release version, set at link time by scripts/build:
//
//	-ldflags "-X github.com/leafbox/leafbox/cmd/internal/cli.version=v1.2.3"
//
// When empty, the module version from the build information is used.
var version string

// buildInfo is what `leafbox version` reports.
type buildInfo struct {
	Version  string // release or module version; "devel" for a local build
	Commit   string // VCS revision, "unknown" when not recorded
	Modified bool   // the work tree had uncommitted changes
	Go       string // Go toolchain version
	Platform string // GOOS/GOARCH
}

func readBuildInfo() buildInfo {
	bi := buildInfo{
		Version:  version,
		Commit:   "unknown",
		Go:       runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH,
	}
	info, ok := debug.ReadBuildInfo()
	if ok {
		if bi.Version == "" && info.Main.Version != "" && info.Main.Version != "(devel)" {
			bi.Version = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				bi.Commit = s.Value
			case "vcs.modified":
				bi.Modified = s.Value == "true"
			}
		}
	}
	if bi.Version == "" {
		bi.Version = "devel"
	}
	return bi
}

func versionString() string {
	bi := readBuildInfo()
	commit := bi.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if bi.Modified {
		commit += "-modified"
	}
	return fmt.Sprintf("%s (commit %s, %s, %s)", bi.Version, commit, bi.Go, bi.Platform)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version and platform",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi := readBuildInfo()
			modified := ""
			if bi.Modified {
				modified = " (modified)"
			}
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "leafbox %s\ncommit:   %s%s\ngo:       %s\nplatform: %s\n",
				bi.Version, bi.Commit, modified, bi.Go, bi.Platform)
			return err
		},
	}
}
