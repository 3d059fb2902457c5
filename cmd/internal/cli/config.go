package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/leafbox/leafbox/cmd/internal/config"
)

func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Check or print configuration files",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newConfigCheckCmd(), newConfigPrintCmd())
	return cmd
}

func newConfigCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check FILE",
		Short: "Validate a configuration file",
		Long: `Validate a configuration file: YAML syntax, unknown keys, value types and
ranges, users and permissions, leafnode remotes, and the files it names
(certificates, CA, credentials, NKey seeds), and what 'leafbox run' would
fail on: listen hosts that are no address of this machine or do not
resolve (nothing is bound), and a store directory that is not a writable
directory (nothing is created). Every problem is printed as
FILE:LINE: KEY.PATH: PROBLEM and the exit status is 1; a valid file prints
an "ok" summary with where streams and outboxes will live and the
JetStream limits.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := loadConfig(args[0], config.Overrides{})
			if err == nil {
				err = cfg.Preflight() // what run would fail on later
			}
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), err)
				return &exitError{code: 1}
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "ok: %s: %s\n", args[0], summary(cfg))
			for _, line := range cfg.StorageSummary() {
				fmt.Fprintf(out, "  %s\n", line)
			}
			return nil
		},
	}
}

func newConfigPrintCmd() *cobra.Command {
	var f configFlags
	cmd := &cobra.Command{
		Use:   "print [FILE]",
		Short: "Print the effective configuration as YAML",
		Long: `Print the effective configuration as YAML: FILE (without one, the file
'leafbox run' would read: $LEAFBOX_CONFIG, else /etc/leafbox/leafbox.yaml
when it exists, else the built-in default) with every default filled in
and the given flags applied, as 'leafbox run' with the same arguments
would use it. Passwords and tokens are redacted.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			overrides, err := f.overrides(cmd.Flags())
			if err != nil {
				return err
			}
			file := ""
			if len(args) == 1 {
				file = args[0]
			} else if file, err = defaultConfigFile(); err != nil {
				return err
			}
			cfg, err := loadConfig(file, overrides)
			if err != nil {
				return err
			}
			return printConfig(cmd.OutOrStdout(), file, cfg)
		},
	}
	f.register(cmd.Flags())
	return cmd
}

func printConfig(w io.Writer, file string, cfg *config.Config) error {
	if file == "" {
		file = "the built-in default"
	}
	fmt.Fprintf(w, "# effective configuration of %s (secrets redacted)\n", file)
	if line := identityLine(cfg); line != "" {
		fmt.Fprintf(w, "# %s\n", line)
	}
	for _, line := range cfg.StorageSummary() {
		fmt.Fprintf(w, "# %s\n", line)
	}
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(cfg.Redacted()); err != nil {
		return err
	}
	return enc.Close()
}

// identityLine describes the gateway identity of cfg, or "" when it has
// no store directory to keep one in.
func identityLine(cfg *config.Config) string {
	if id := cfg.Identity(); id != nil {
		return "identity: " + id.PublicKey() + " (" + id.Path() + ")"
	}
	if path := cfg.IdentityPath(); path != "" {
		return "identity: none yet; the first run generates " + path + " and, without server_name, derives the server name from it"
	}
	return ""
}

// summary describes cfg in one line for config check.
func summary(cfg *config.Config) string {
	var parts []string
	parts = append(parts, "clients "+hostPort(cfg.Listen.Host, cfg.Port))
	if p := *cfg.HTTPPort; p == 0 {
		parts = append(parts, "monitoring off")
	} else {
		parts = append(parts, "monitoring "+hostPort(cfg.HTTP.Host, p))
	}
	users := 0
	if a := cfg.Authorization; a != nil {
		users += len(a.Users)
		if a.User != "" {
			users++
		}
	}
	for _, acc := range cfg.Accounts {
		users += len(acc.Users)
	}
	switch {
	case cfg.Authorization != nil && cfg.Authorization.Token != "":
		parts = append(parts, "auth token")
	case users > 0:
		parts = append(parts, plural(users, "user")+", "+plural(len(cfg.Accounts), "account"))
	default:
		parts = append(parts, "no auth")
	}
	if cfg.TLS != nil {
		parts = append(parts, "tls on")
	} else {
		parts = append(parts, "tls off")
	}
	if cfg.JetStream != nil && cfg.JetStream.Enabled {
		parts = append(parts, "jetstream on (store "+cfg.JetStream.StoreDir+")")
	} else {
		parts = append(parts, "jetstream off")
	}
	if id := cfg.Identity(); id != nil {
		parts = append(parts, "identity "+id.PublicKey())
	} else if cfg.IdentityPath() != "" {
		parts = append(parts, "identity generated on first run")
	}
	if cfg.LeafNodes != nil && len(cfg.LeafNodes.Remotes) > 0 {
		parts = append(parts, plural(len(cfg.LeafNodes.Remotes), "leafnode remote"))
	}
	if cfg.LeafNodes != nil && !cfg.LeafNodes.Listen.IsZero() {
		parts = append(parts, "leafnodes on "+cfg.LeafNodes.Listen.String())
	}
	return strings.Join(parts, ", ")
}

func hostPort(host string, port int) string {
	if port == -1 {
		return host + ":<free port>"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return fmt.Sprintf("%s:%d", host, port)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
