package commands

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
)

// maxPassword bounds what --password-stdin reads: a token, not a file.
const maxPassword = 64 << 10

func newCmdLogin(g *options.Global) *cobra.Command {
	var user string
	var fromStdin bool
	cmd := &cobra.Command{
		Use:   "login HOST -u USER --password-stdin",
		Short: "Save credentials for a registry in the Docker config, as docker and crane do",
		Long: `Check USER and the password (read from stdin) against HOST, then save them
in the Docker config file ($DOCKER_CONFIG/config.json, else
~/.docker/config.json), or in the credential helper that file names for
HOST, as docker login and crane auth login do. Every ssebench command, and
BuildKit and containerd through it, then uses them for HOST.`,
		Example: `  ssebench login registry.lan:5000 -u ci --password-stdin < ~/.registry-token`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := remote.ParseHost(args[0])
			if err != nil {
				return err
			}
			password, err := readPassword(cmd, reg.RegistryStr(), user, fromStdin)
			if err != nil {
				return err
			}
			acc, err := g.Access()
			if err != nil {
				return err
			}
			file, err := remote.Login(cmd.Context(), reg, user, password, acc.PlainHTTP(reg.RegistryStr()))
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged in to %s as %s (credentials in %s)\n", reg.RegistryStr(), user, file)
			return nil
		},
	}
	cmd.Flags().StringVarP(&user, "username", "u", "", "user name (required)")
	cmd.Flags().BoolVar(&fromStdin, "password-stdin", false, "read the password or token from stdin (required)")
	return cmd
}

// readPassword reads login's password from stdin, once -u and
// --password-stdin are there.
func readPassword(cmd *cobra.Command, host, user string, fromStdin bool) (string, error) {
	if user == "" {
		return "", fmt.Errorf("-u is required: pass the user name, e.g. ssebench login %s -u USER --password-stdin", host)
	}
	if !fromStdin {
		return "", fmt.Errorf("pass the password on stdin with --password-stdin, e.g. echo \"$TOKEN\" | ssebench login %s -u %s --password-stdin", host, user)
	}
	b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxPassword))
	if err != nil {
		return "", fmt.Errorf("reading the password from stdin: %w", err)
	}
	password := strings.TrimRight(string(b), "\r\n")
	if password == "" {
		return "", errors.New("the password on stdin is empty: pipe it in, e.g. echo \"$TOKEN\" | ssebench login HOST -u USER --password-stdin")
	}
	return password, nil
}

func newCmdLogout() *cobra.Command {
	return &cobra.Command{
		Use:     "logout HOST",
		Short:   "Remove the credentials for a registry from the Docker config",
		Example: `  ssebench logout registry.lan:5000`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := remote.ParseHost(args[0])
			if err != nil {
				return err
			}
			was, err := remote.Logout(reg)
			if err != nil {
				return err
			}
			if !was {
				fmt.Fprintf(cmd.OutOrStdout(), "not logged in to %s\n", reg.RegistryStr())
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged out of %s\n", reg.RegistryStr())
			return nil
		},
	}
}
