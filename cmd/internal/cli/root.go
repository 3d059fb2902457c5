// Package cli is leafbox's command line: the cobra commands run, config
// check, config print, uplink status, bridge status, store verify, store inspect,
// version and completion. It parses
// flags, sets up logging and signals, and leaves everything else to
// package app.
package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/leafbox/leafbox/cmd/internal/config"
)

// Execute runs the leafbox command line with args (without the program
// name) and returns the process exit code: 0 on success, 1 on any error.
// Errors are printed to stderr prefixed with "leafbox: ".
func Execute(args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	var silent *exitError
	var ce *config.Error
	switch {
	case errors.As(err, &silent):
		return silent.code
	case errors.As(err, &ce):
		for _, line := range strings.Split(ce.Error(), "\n") {
			fmt.Fprintln(stderr, "leafbox:", line)
		}
	default:
		fmt.Fprintln(stderr, "leafbox:", err)
	}
	return 1
}

// exitError ends the program with code after the command has already
// printed what went wrong.
type exitError struct{ code int }

// Error describes the exit status.
func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "leafbox",
		Short: "leafbox is a NATS-protocol broker for edge gateways",
		Long: "leafbox is a NATS-protocol broker for edge gateways: official NATS clients\n" +
			"connect to it unchanged. Start it with `leafbox run`.",
		Version:       versionString(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(), newConfigCmd(), newUplinkCmd(), newBridgeCmd(), newMQTTCmd(), newUpgradeCmd(), newFleetCmd(), newStoreCmd(), newVersionCmd())
	return root
}
