package remote

import (
	"context"
	"errors"
	"fmt"
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
)

// Login checks user and password against reg, then saves them where
// docker login and crane auth login do: in the Docker config file
// ($DOCKER_CONFIG/config.json, else ~/.docker/config.json), or in the
// credential helper it names for reg. plainHTTP says reg speaks HTTP
// (Access.PlainHTTP). It returns the config file's name; a password reg
// refuses saves nothing.
func Login(ctx context.Context, reg name.Registry, user, password string, plainHTTP bool) (string, error) {
	if plainHTTP {
		reg, _ = name.NewRegistry(reg.RegistryStr(), name.Insecure)
	}
	if err := checkLogin(ctx, reg, user, password); err != nil {
		return "", err
	}
	cf, err := loadDockerConfig()
	if err != nil {
		return "", err
	}
	key := authKey(reg)
	if err := cf.GetCredentialsStore(key).Store(types.AuthConfig{ServerAddress: key, Username: user, Password: password}); err != nil {
		return "", fmt.Errorf("saving the credentials for %s: %w", key, err)
	}
	if err := cf.Save(); err != nil {
		return "", fmt.Errorf("writing %s: %w", cf.Filename, err)
	}
	return cf.Filename, nil
}

// Logout removes the credentials for reg from the Docker config (or its
// credential helper); false when there were none.
func Logout(reg name.Registry) (bool, error) {
	cf, err := loadDockerConfig()
	if err != nil {
		return false, err
	}
	key := authKey(reg)
	if _, ok := cf.AuthConfigs[key]; !ok && cf.CredentialsStore == "" && cf.CredentialHelpers[key] == "" {
		return false, nil
	}
	if err := cf.GetCredentialsStore(key).Erase(key); err != nil {
		return false, fmt.Errorf("removing the credentials for %s: %w", key, err)
	}
	if err := cf.Save(); err != nil {
		return false, fmt.Errorf("writing %s: %w", cf.Filename, err)
	}
	return true, nil
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

// ParseHost parses HOST[:PORT] (a scheme and a trailing slash are dropped); a name with a path or scheme is refused,
// since credentials are per host.
func ParseHost(s string) (name.Registry, error) {
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
