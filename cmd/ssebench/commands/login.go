package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"

	"github.com/docker/cli/cli/config"
	"github.com/docker/cli/cli/config/configfile"
	"github.com/docker/cli/cli/config/types"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/spf13/cobra"

	"github.com/42-b3yond-6ug/ssebench/cmd/ssebench/commands/options"
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
			reg, err := registryArg(args[0])
			if err != nil {
				return err
			}
			if user == "" {
				return fmt.Errorf("-u is required: pass the user name, e.g. ssebench login %s -u USER --password-stdin", reg.RegistryStr())
			}
			if !fromStdin {
				return fmt.Errorf("pass the password on stdin with --password-stdin, e.g. echo \"$TOKEN\" | ssebench login %s -u %s --password-stdin", reg.RegistryStr(), user)
			}
			b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), maxPassword))
			if err != nil {
				return fmt.Errorf("reading the password from stdin: %w", err)
			}
			password := strings.TrimRight(string(b), "\r\n")
			if password == "" {
				return errors.New("the password on stdin is empty: pipe it in, e.g. echo \"$TOKEN\" | ssebench login HOST -u USER --password-stdin")
			}
			acc, err := g.Access()
			if err != nil {
				return err
			}
			if acc.PlainHTTP(reg.RegistryStr()) {
				reg, _ = name.NewRegistry(reg.RegistryStr(), name.Insecure)
			}
			if err := checkLogin(cmd.Context(), reg, user, password); err != nil {
				return err
			}
			cf, err := loadDockerConfig()
			if err != nil {
				return err
			}
			key := authKey(reg)
			if err := cf.GetCredentialsStore(key).Store(types.AuthConfig{ServerAddress: key, Username: user, Password: password}); err != nil {
				return fmt.Errorf("saving the credentials for %s: %w", key, err)
			}
			if err := cf.Save(); err != nil {
				return fmt.Errorf("writing %s: %w", cf.Filename, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged in to %s as %s (credentials in %s)\n", reg.RegistryStr(), user, cf.Filename)
			return nil
		},
	}
	cmd.Flags().StringVarP(&user, "username", "u", "", "user name (required)")
	cmd.Flags().BoolVar(&fromStdin, "password-stdin", false, "read the password or token from stdin (required)")
	return cmd
}

func newCmdLogout() *cobra.Command {
	return &cobra.Command{
		Use:     "logout HOST",
		Short:   "Remove the credentials for a registry from the Docker config",
		Example: `  ssebench logout registry.lan:5000`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg, err := registryArg(args[0])
			if err != nil {
				return err
			}
			cf, err := loadDockerConfig()
			if err != nil {
				return err
			}
			key := authKey(reg)
			if _, ok := cf.AuthConfigs[key]; !ok && cf.CredentialsStore == "" && cf.CredentialHelpers[key] == "" {
				fmt.Fprintf(cmd.OutOrStdout(), "not logged in to %s\n", reg.RegistryStr())
				return nil
			}
			if err := cf.GetCredentialsStore(key).Erase(key); err != nil {
				return fmt.Errorf("removing the credentials for %s: %w", key, err)
			}
			if err := cf.Save(); err != nil {
				return fmt.Errorf("writing %s: %w", cf.Filename, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "logged out of %s\n", reg.RegistryStr())
			return nil
		},
	}
}

// loadDockerConfig reads the Docker config as go-containerregistry's
// keychain does: $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
// DOCKER_CONFIG is read on each call (docker's config.Dir remembers the
// first value it saw).
func loadDockerConfig() (*configfile.ConfigFile, error) {
	dir := os.Getenv(config.EnvOverrideConfigDir)
	cf, err := config.Load(dir)
	if err != nil {
		if dir == "" {
			dir = config.Dir()
		}
		return nil, fmt.Errorf("reading the Docker config in %s: %w", dir, err)
	}
	return cf, nil
}

// registryArg parses HOST[:PORT]; a name with a path or scheme is refused,
// since credentials are per host.
func registryArg(s string) (name.Registry, error) {
	host := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "https://"), "http://"), "/")
	if strings.Contains(host, "/") || host == "" {
		return name.Registry{}, fmt.Errorf("%q is not a registry host: pass HOST or HOST:PORT, e.g. registry.lan:5000", s)
	}
	reg, err := name.NewRegistry(host, name.StrictValidation)
	if err != nil {
		return name.Registry{}, fmt.Errorf("%q is not a registry host: pass HOST or HOST:PORT, e.g. registry.lan:5000", s)
	}
	return reg, nil
}

// authKey is the key of reg in the Docker config: Docker Hub keeps its
// historical URL, as go-containerregistry's keychain looks it up.
func authKey(reg name.Registry) string {
	if reg.RegistryStr() == name.DefaultRegistry {
		return authn.DefaultAuthKey
	}
	return reg.RegistryStr()
}

// checkLogin asks reg for a token (or checks basic auth) with the
// credentials, so that a wrong password is said now, not at the next push.
func checkLogin(ctx context.Context, reg name.Registry, user, password string) error {
	auth := authn.FromConfig(authn.AuthConfig{Username: user, Password: password})
	_, err := transport.NewWithContext(ctx, reg, auth, http.DefaultTransport, []string{reg.Scope(transport.PullScope)})
	if err == nil {
		// A registry with basic auth answers the ping 401 and takes the
		// credentials on each request: try one.
		err = pingWith(ctx, reg, user, password)
	}
	if err != nil {
		var te *transport.Error
		if errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden) {
			return fmt.Errorf("%s refused user %s: check the user name and password (nothing was saved)", reg.RegistryStr(), user)
		}
		return fmt.Errorf("logging in to %s: %w (nothing was saved)", reg.RegistryStr(), err)
	}
	return nil
}

func pingWith(ctx context.Context, reg name.Registry, user, password string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, reg.Scheme()+"://"+reg.RegistryStr()+"/v2/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(strings.ToLower(resp.Header.Get("WWW-Authenticate")), "basic") {
		return nil
	}
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, reg.Scheme()+"://"+reg.RegistryStr()+"/v2/", nil)
	req.SetBasicAuth(user, password)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return transport.CheckError(resp, http.StatusOK)
}

// unauthorizedText finds a refusal in an error that lost its type on the
// way (BuildKit and containerd report them as text).
var (
	unauthorizedText = regexp.MustCompile(`(?i)\b(401 unauthorized|403 forbidden|unauthorized|denied: requested access|authentication required|status(?: code)?:? 40[13])\b`)
	hostInText       = regexp.MustCompile(`https?://([^/\s"?]+)`)
	// registryText tells a registry's refusal from another service's (a
	// model API's 401 is no matter for ssebench login).
	registryText = regexp.MustCompile(`(?i)/v2/|registry|manifest|blob|\bpull|\bpush|\bfetch`)
)

// LoginHint returns how to log in when err is a registry's 401 or 403, or
// "". Main adds it to the error it prints.
func LoginHint(err error) string {
	host := ""
	var te *transport.Error
	switch {
	case errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden):
		if te.Request != nil {
			host = te.Request.URL.Host
		}
	case unauthorizedText.MatchString(err.Error()) && registryText.MatchString(err.Error()):
		if m := hostInText.FindStringSubmatch(err.Error()); m != nil {
			host = m[1]
		}
	default:
		return ""
	}
	if host == "" {
		host = "HOST"
	}
	return fmt.Sprintf("the registry refused the request: log in with `ssebench login %s -u USER --password-stdin`", host)
}
