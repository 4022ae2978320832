package runtimebin

import (
	"bufio"
	"context"
	"crypto/sha512"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// DefaultNPMRegistry is the registry used when the machine names none.
const DefaultNPMRegistry = "https://registry.npmjs.org/"

// NPMRegistryURL returns the npm registry the machine is configured for,
// the way npm finds it: $NPM_CONFIG_REGISTRY (or npm_config_registry),
// else `registry=` in ~/.npmrc, else DefaultNPMRegistry. getenv is
// os.Getenv in production.
func NPMRegistryURL(getenv func(string) string) string {
	for _, k := range []string{"NPM_CONFIG_REGISTRY", "npm_config_registry"} {
		if v := strings.TrimSpace(getenv(k)); v != "" {
			return withSlash(v)
		}
	}
	if home := getenv("HOME"); home != "" {
		if f, err := os.Open(filepath.Join(home, ".npmrc")); err == nil {
			defer f.Close()
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				k, v, ok := strings.Cut(sc.Text(), "=")
				if ok && strings.TrimSpace(k) == "registry" && strings.TrimSpace(v) != "" {
					return withSlash(strings.TrimSpace(v))
				}
			}
		}
	}
	return DefaultNPMRegistry
}

func withSlash(u string) string {
	if !strings.HasSuffix(u, "/") {
		u += "/"
	}
	return u
}

// npmHTTPClient trusts the machine's CAs plus $NODE_EXTRA_CA_CERTS (what
// npm and Node.js trust), and goes through the proxy the environment names.
func npmHTTPClient(getenv func(string) string) (*http.Client, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	if f := strings.TrimSpace(getenv("NODE_EXTRA_CA_CERTS")); f != "" {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("reading NODE_EXTRA_CA_CERTS: %w: fix or unset it", err)
		}
		pool.AppendCertsFromPEM(pem)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	// A response may stall; a tarball of 60 MB on a slow line may not
	// finish in a minute, so the whole request has no deadline, only
	// the header wait has.
	tr.ResponseHeaderTimeout = 30 * time.Second
	return &http.Client{Transport: tr}, nil
}

// npmRegistry reads package metadata and tarballs from an npm registry's
// HTTP API (no npm client) and keeps what it downloads in a cache
// directory, so that a rebuild needs no network.
type npmRegistry struct {
	base   string // with a trailing slash
	client *http.Client
	cache  string // "" = no cache
}

// npmVersion is the part of a package version's document used here.
type npmVersion struct {
	Name         string            `json:"name"`
	Version      string            `json:"version"`
	Dependencies map[string]string `json:"dependencies,omitempty"`
	Dist         npmDist           `json:"dist"`
}

type npmDist struct {
	Tarball   string `json:"tarball"`
	Integrity string `json:"integrity"`
}

// npmPackument is the part of a package's full document used here.
type npmPackument struct {
	Versions map[string]npmVersion `json:"versions"`
	Time     map[string]time.Time  `json:"time"`
}

// escapeName spells a package name in a registry URL: a scoped name's
// slash is encoded, as npm does.
func escapeName(name string) string {
	if strings.HasPrefix(name, "@") {
		return strings.Replace(url.PathEscape(name), "%40", "@", 1)
	}
	return url.PathEscape(name)
}

func (r *npmRegistry) getJSON(ctx context.Context, p string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+p, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.client.Do(req)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errNPMUnreachable, r.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%w: %s: GET %s: %s", errNPMUnreachable, r.base, p, resp.Status)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("npm registry %s: GET %s: %s", r.base, p, resp.Status)
	}
	// Package documents are a few MB at most; 64 MB bounds a hostile one.
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(v); err != nil {
		return fmt.Errorf("npm registry %s: reading %s: %w", r.base, p, err)
	}
	return nil
}

// version returns the document of name@version.
func (r *npmRegistry) version(ctx context.Context, name, version string) (*npmVersion, error) {
	var v npmVersion
	if err := r.getJSON(ctx, escapeName(name)+"/"+url.PathEscape(version), &v); err != nil {
		return nil, err
	}
	if v.Name != name || v.Version != version {
		return nil, fmt.Errorf("npm registry %s answered %s@%s for %s@%s", r.base, v.Name, v.Version, name, version)
	}
	return &v, nil
}

// packument returns the full document of name: every version and its
// publication time.
func (r *npmRegistry) packument(ctx context.Context, name string) (*npmPackument, error) {
	var p npmPackument
	if err := r.getJSON(ctx, escapeName(name), &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// sha512Integrity returns the SHA-512 digest a Subresource Integrity
// string (such as npm's dist.integrity) names.
func sha512Integrity(sri string) ([]byte, error) {
	for _, f := range strings.Fields(sri) {
		if b64, ok := strings.CutPrefix(f, "sha512-"); ok {
			b64, _, _ = strings.Cut(b64, "?")
			sum, err := base64.StdEncoding.DecodeString(b64)
			if err == nil && len(sum) == sha512.Size {
				return sum, nil
			}
		}
	}
	return nil, fmt.Errorf("integrity %q has no sha512 digest", sri)
}

// tarball returns the path of name@version's tarball in the cache,
// downloading it when it is not there. The file is checked against
// dist.integrity every time, on its way in and when read from the cache.
func (r *npmRegistry) tarball(ctx context.Context, v *npmVersion) (string, error) {
	want, err := sha512Integrity(v.Dist.Integrity)
	if err != nil {
		return "", fmt.Errorf("%s@%s: %w: the registry must publish sha512 integrity", v.Name, v.Version, err)
	}
	// Keyed by name, version and integrity: a republished tarball under
	// the same version gets a file of its own.
	file := filepath.Join(r.cache, "tarballs", strings.ReplaceAll(strings.TrimPrefix(v.Name, "@"), "/", "-")+"-"+v.Version+"-"+hex.EncodeToString(want[:12])+".tgz")
	if err := checkSHA512(file, want); err == nil {
		return file, nil
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return "", fmt.Errorf("creating the npm cache: %w", err)
	}
	u := v.Dist.Tarball
	if u == "" {
		return "", fmt.Errorf("%s@%s has no tarball in the registry", v.Name, v.Version)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: cannot download %s@%s: %w", errNPMUnreachable, v.Name, v.Version, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%w: downloading %s@%s: %s", errNPMUnreachable, v.Name, v.Version, resp.Status)
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".download-*")
	if err != nil {
		return "", fmt.Errorf("writing to the npm cache: %w", err)
	}
	defer os.Remove(tmp.Name())
	h := sha512.New()
	// The integrity is whatever the registry says it is (a dependency's
	// version is resolved from its metadata), so it bounds nothing: a
	// hostile or broken registry could stream without end.
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(resp.Body, maxNPMTarball+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("%w: downloading %s@%s: %w", errNPMUnreachable, v.Name, v.Version, err)
	}
	if n > maxNPMTarball {
		return "", fmt.Errorf("%s@%s: the registry's tarball is larger than %d MiB, more than any package the runtime image takes: check the npm registry (NPM_CONFIG_REGISTRY or ~/.npmrc)", v.Name, v.Version, maxNPMTarball>>20)
	}
	if got := h.Sum(nil); string(got) != string(want) {
		return "", fmt.Errorf("%s@%s: the tarball's sha512 is %s, the registry publishes %s: the download or the mirror is corrupt", v.Name, v.Version, base64.StdEncoding.EncodeToString(got), v.Dist.Integrity)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return "", fmt.Errorf("writing to the npm cache: %w", err)
	}
	return file, nil
}

// checkSHA512 reports whether file exists with the SHA-512 digest want.
func checkSHA512(file string, want []byte) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha512.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if string(h.Sum(nil)) != string(want) {
		return errors.New("digest mismatch")
	}
	return nil
}
