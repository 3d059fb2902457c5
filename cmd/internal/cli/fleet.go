package cli

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/leafbox/leafbox/cmd/internal/config"
	"github.com/leafbox/leafbox/cmd/internal/fleet"
)

func newFleetCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "fleet",
		Short: "Make signed configuration bundles for gateways",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newFleetBundleCmd())
	return cmd
}

func newFleetBundleCmd() *cobra.Command {
	var seed, gateway, group, out string
	var serial uint64
	cmd := &cobra.Command{
		Use:   "bundle --seed OPERATOR.nk (--gateway N... | --group NAME) [--serial N] CONFIG.yaml",
		Short: "Sign a gateway configuration as a fleet bundle",
		Long: `Sign CONFIG.yaml, a complete gateway configuration, with an operator NKey
seed for one gateway (--gateway, its identity's public key: /varz
public_key) or a fleet group (--group), and print the bundle (or write it
to --output). Send it from the hub with the nats CLI:

  nats request '$LEAFBOX.fleet.<public key>.config' --force-stdin < bundle.json
  nats request '$LEAFBOX.fleet.group.<group>.config' --force-stdin --replies 0 < bundle.json

The gateway answers applied, rejected (why) or rolled_back (why). It takes
only serials higher than any it took before: the default serial is the
current Unix time in seconds. CONFIG.yaml is checked for syntax and keys
here; the gateway validates it fully (as config check does) before use.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (gateway == "") == (group == "") {
				return errors.New("give one target: --gateway PUBLIC_KEY or --group NAME")
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			if _, err := config.Parse(data); err != nil {
				if ce, ok := err.(*config.Error); ok {
					ce.File = args[0]
				}
				return err
			}
			s, err := readSeed(seed)
			if err != nil {
				return err
			}
			if serial == 0 {
				serial = uint64(time.Now().Unix())
			}
			bundle, err := fleet.Sign(s, fleet.Body{Serial: serial, Gateway: gateway, Group: group,
				Config: string(data), Created: time.Now().UTC().Truncate(time.Second)})
			if err != nil {
				return err
			}
			bundle = append(bundle, '\n')
			if out == "" {
				_, err = cmd.OutOrStdout().Write(bundle)
				return err
			}
			if err := os.WriteFile(out, bundle, 0o600); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: serial %d for %s\n", out, serial, target(gateway, group))
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&seed, "seed", "", "operator NKey seed file (required)")
	fs.StringVar(&gateway, "gateway", "", "the target gateway's identity public key (N...)")
	fs.StringVar(&group, "group", "", "the target fleet group")
	fs.Uint64Var(&serial, "serial", 0, "the bundle's serial (default: the current Unix time)")
	fs.StringVarP(&out, "output", "o", "", "write the bundle here instead of stdout")
	_ = cmd.MarkFlagRequired("seed")
	return cmd
}

func target(gateway, group string) string {
	if gateway != "" {
		return "gateway " + gateway
	}
	return "group " + group
}
