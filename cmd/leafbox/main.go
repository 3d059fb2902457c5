// Command leafbox is a NATS-protocol broker for edge gateways.
// Run `leafbox --help` for its commands.
package main

import (
	"os"

	"github.com/leafbox/leafbox/cmd/internal/cli"
)

func main() {
	os.Exit(cli.Execute(os.Args[1:], os.Stdout, os.Stderr))
}
