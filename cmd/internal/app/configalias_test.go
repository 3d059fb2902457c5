package app

import "github.com/leafbox/leafbox/cmd/internal/config"

// The gateway tests build their configurations with cmd/internal/config.
// These aliases keep the tests' text as it was before the configuration
// moved out of this package, so that moving it changed no test.
type (
	Config        = config.Config
	Env           = config.Env
	Machine       = config.Machine
	DiskSpace     = config.DiskSpace
	Overrides     = config.Overrides
	Duration      = config.Duration
	HealthzConfig = config.HealthzConfig
)

var (
	Parse = config.Parse
	Load  = config.Load
)

const DefaultMinFreeDisk = config.DefaultMinFreeDisk

const redactedSecret = config.RedactedSecret
