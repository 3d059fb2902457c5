package cli

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/leafbox/leafbox/cmd/internal/config"
)

// configFlags are the flags that override the configuration file; run and
// config print share them. Only flags the user set are applied.
type configFlags struct {
	addr        string
	port        int
	httpPort    int
	serverName  string
	jetStream   bool
	storeDir    string
	leafRemotes []string
	leafPort    int
}

func (f *configFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.addr, "addr", "", "host to listen on for clients (default 0.0.0.0)")
	fs.IntVar(&f.port, "port", 0, "client port (default 4222; -1 picks a free port)")
	fs.IntVar(&f.httpPort, "http-port", 0, "monitoring port (default 8222; 0 turns monitoring off; -1 picks a free port)")
	fs.StringVar(&f.serverName, "server-name", "", "server name reported to clients and in monitoring")
	fs.BoolVar(&f.jetStream, "jetstream", false, "run JetStream (on by default; --jetstream=false turns it off)")
	fs.StringVar(&f.storeDir, "store-dir", "", "JetStream store directory (default $STATE_DIRECTORY, else ~/.local/state/leafbox)")
	fs.StringArrayVar(&f.leafRemotes, "leaf-remote", nil, "connect to a hub as a leaf node: its leafnode URL (nats-leaf://, nats:// or tls://), repeatable; replaces the file's remotes")
	fs.IntVar(&f.leafPort, "leaf-port", 0, "accept leaf node connections on this port (leafnodes.listen; -1 picks a free port)")
}

// overrides returns the values of the flags set on the command line.
func (f *configFlags) overrides(fs *pflag.FlagSet) (config.Overrides, error) {
	var o config.Overrides
	if fs.Changed("addr") {
		o.Host = &f.addr
	}
	if fs.Changed("port") {
		o.Port = &f.port
	}
	if fs.Changed("http-port") {
		o.HTTPPort = &f.httpPort
	}
	if fs.Changed("server-name") {
		o.ServerName = &f.serverName
	}
	if fs.Changed("jetstream") {
		o.JetStream = &f.jetStream
	}
	if fs.Changed("store-dir") {
		dir, err := filepath.Abs(f.storeDir)
		if err != nil {
			return o, fmt.Errorf("--store-dir: %w", err)
		}
		o.StoreDir = &dir
	}
	if fs.Changed("leaf-remote") {
		o.LeafRemotes = append([]string{}, f.leafRemotes...)
	}
	if fs.Changed("leaf-port") {
		o.LeafPort = &f.leafPort
	}
	return o, nil
}

// loadConfig reads file (or the embedded default when file is ""), applies
// the overrides, the defaults and the gateway identity, when it exists,
// and validates the result.
func loadConfig(file string, o config.Overrides) (*config.Config, error) {
	cfg := config.Default()
	if file != "" {
		var err error
		if cfg, err = config.Load(file); err != nil {
			return nil, err
		}
	}
	if err := prepareConfig(cfg, o); err != nil {
		return nil, err
	}
	return cfg, nil
}

// prepareConfig finishes a parsed configuration: the overrides, the
// defaults, the identity (read only: run generates a missing one when it
// starts), validation. Fleet bundles' configurations go through it too.
func prepareConfig(cfg *config.Config, o config.Overrides) error {
	o.Apply(cfg)
	cfg.SetDefaults(config.OSEnv())
	if _, err := cfg.ApplyIdentity(false); err != nil {
		return err
	}
	return cfg.Validate()
}

// newLogger returns a logger to w at level (debug, info, warn or error) in
// format: text (slog's key=value lines) or json (one JSON object a line).
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var l slog.Level
	switch strings.ToLower(level) {
	case "debug":
		l = slog.LevelDebug
	case "info":
		l = slog.LevelInfo
	case "warn":
		l = slog.LevelWarn
	case "error":
		l = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", level)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	default:
		return nil, fmt.Errorf("--log-format: %q is not one of text, json", format)
	}
}
