package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
)

// Environment variables that name a catalog and a lock when no flag does.
const (
	// CatalogEnv names the catalog (any form Open takes).
	CatalogEnv = "SSEBENCH_CATALOG"
	// LockEnv names an images lock (a path, or an https:// URL with a
	// "#sha256=<hex>" pin) that replaces the catalog's own.
	LockEnv = "SSEBENCH_IMAGES_LOCK"
)

// Scheme prefixes of catalog locations.
const (
	OCIScheme   = "oci://"
	HTTPSScheme = "https://"
)

// maxDocument bounds a manifest or lock read from a URL or an artifact:
// a manifest of thousands of tasks is a few megabytes.
const maxDocument = 64 << 20

// Catalog is an opened catalog: its manifest, its lock when it has a
// usable one, and where its images are.
type Catalog struct {
	// Source is the catalog as the user named it.
	Source string
	// Manifest is the catalog's manifest.json.
	Manifest *task.Manifest
	// Lock is the images lock, nil when the catalog has none or it is
	// unusable (see Warnings).
	Lock *task.Lock
	// Registry is the prefix of the catalog's images when its location
	// says it (an oci:// catalog's registry path, before /catalog/);
	// "" means REGISTRY.
	Registry string
	// Warnings are what the user should know: a lock that is malformed,
	// for another dataset or version, or missing.
	Warnings []string
}

// Option configures Open.
type Option func(*options) error

type options struct {
	lock   string
	client *http.Client
	remote []remote.Option
}

// WithLock replaces the catalog's lock with the one at loc (a path, or an
// https:// URL pinned with "#sha256=<hex>"); "" keeps the catalog's. The
// default is the catalog's own lock.
func WithLock(loc string) Option {
	return func(o *options) error { o.lock = loc; return nil }
}

// WithHTTPClient sets the client of https:// catalogs. The default is
// http.DefaultClient.
func WithHTTPClient(c *http.Client) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("catalog.WithHTTPClient: nil client")
		}
		o.client = c
		return nil
	}
}

// WithRemote sets how oci:// catalogs are fetched (plain-HTTP hosts,
// credentials). The default is remote's defaults.
func WithRemote(opts ...remote.Option) Option {
	return func(o *options) error { o.remote = append(o.remote, opts...); return nil }
}

// Open opens the catalog at loc:
//
//   - a folder: its manifest.json and, when present, images.lock.json;
//   - a file: a manifest.json, with the images.lock.json next to it;
//   - https://host/path/manifest.json#sha256=<hex>: the manifest, which
//     must have that SHA-256; with "&lock-sha256=<hex>" also the
//     images.lock.json next to it, which must have that one (an https
//     catalog without a pin is refused: the URL's server could serve
//     anything);
//   - oci://REGISTRY/catalog/<dataset>:<version> (or @sha256:…): the
//     artifact `dataset publish` pushes, whose images are under REGISTRY.
func Open(ctx context.Context, loc string, opts ...Option) (*Catalog, error) {
	o := &options{client: http.DefaultClient}
	for _, opt := range opts {
		if err := opt(o); err != nil {
			return nil, err
		}
	}
	if loc == "" {
		return nil, fmt.Errorf("no catalog: pass --catalog (a folder, a manifest.json, an https:// URL or an oci:// artifact) or set %s", CatalogEnv)
	}
	c := &Catalog{Source: loc}
	var lockData []byte
	var lockName string
	var err error
	switch {
	case strings.HasPrefix(loc, OCIScheme):
		var mdata []byte
		var ref string
		if ref, c.Registry, err = ArtifactRef(loc); err != nil {
			return nil, err
		}
		if mdata, lockData, err = Fetch(ctx, ref, o.remote...); err != nil {
			return nil, err
		}
		if c.Manifest, err = task.ParseManifest(loc, mdata); err != nil {
			return nil, err
		}
		lockName = loc + " (" + task.LockFile + ")"
	case strings.HasPrefix(loc, HTTPSScheme):
		if c.Manifest, lockData, lockName, err = o.openHTTPS(ctx, loc); err != nil {
			return nil, err
		}
	case strings.Contains(loc, "://"):
		return nil, fmt.Errorf("catalog %q: unknown scheme: use a folder, a manifest.json path, an https:// URL or an oci:// artifact", loc)
	default:
		mpath := loc
		if st, err := os.Stat(loc); err != nil {
			return nil, fmt.Errorf("reading the catalog: %w", err)
		} else if st.IsDir() {
			mpath = filepath.Join(loc, task.ManifestFile)
		}
		if c.Manifest, err = task.ReadManifest(mpath); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("catalog %s has no %s: generate it with `ssebench dataset manifest`", loc, task.ManifestFile)
			}
			return nil, fmt.Errorf("reading the catalog: %w", err)
		}
		lockName = filepath.Join(filepath.Dir(mpath), task.LockFile)
		if lockData, err = os.ReadFile(lockName); errors.Is(err, fs.ErrNotExist) {
			lockData = nil
		} else if err != nil {
			// Read as an empty file: a malformed lock, which is what it
			// is to the user.
			lockData = []byte{}
		}
	}
	if o.lock != "" {
		lockName = o.lock
		if lockData, err = o.readLock(ctx, o.lock); err != nil {
			return nil, fmt.Errorf("reading the images lock (%s): %w", LockEnv, err)
		}
	}
	c.useLock(lockName, lockData)
	return c, nil
}

// useLock parses the lock and keeps it when it is for the catalog's
// dataset and version; otherwise it says why in a warning.
func (c *Catalog) useLock(name string, data []byte) {
	if data == nil {
		c.Warnings = append(c.Warnings, fmt.Sprintf("catalog %s has no images lock: case images are pulled by tag, not pinned by digest", c.Source))
		return
	}
	l, err := task.ParseLock(name, data)
	if err != nil {
		c.Warnings = append(c.Warnings, fmt.Sprintf("ignoring a malformed images lock: %v; case images are pulled by tag", err))
		return
	}
	if l.Dataset != c.Manifest.Dataset || l.Version != c.Manifest.Version {
		c.Warnings = append(c.Warnings, fmt.Sprintf("ignoring the stale images lock %s: it is for %s %s, the catalog is %s %s; case images are pulled by tag", name, l.Dataset, l.Version, c.Manifest.Dataset, c.Manifest.Version))
		return
	}
	c.Lock = l
}

// CaseRef returns the reference to pull task id's case image from, its
// images under registry unless the catalog says where they are: pinned by
// digest when the lock pins the task with the manifest's files digest,
// else tagged with the dataset version. warning is set when the lock
// exists but does not pin the task (missing, or built from other files).
func (c *Catalog) CaseRef(registry, id string) (ref string, byDigest bool, warning string, err error) {
	reg := registry
	if c.Registry != "" {
		reg = c.Registry
	}
	ref, byDigest, err = task.CaseImageRef(reg, c.Manifest, id, c.Lock)
	if err != nil || byDigest || c.Lock == nil {
		return ref, byDigest, "", err
	}
	if _, ok := c.Lock.Images[id]; ok {
		warning = fmt.Sprintf("the images lock of %s pins %s from other task files than the catalog lists (stale): pulling %s by tag", c.Source, id, ref)
	} else {
		warning = fmt.Sprintf("the images lock of %s does not pin %s: pulling %s by tag", c.Source, id, ref)
	}
	return ref, false, warning, nil
}

// Locked returns the digest the lock pins task id to, or "".
func (c *Catalog) Locked(id string) string {
	if c.Lock == nil {
		return ""
	}
	return c.Lock.Images[id].Digest
}

// ArtifactRef splits an oci:// catalog location into the artifact's
// reference and the registry prefix of its images (the part before
// "/catalog/").
func ArtifactRef(loc string) (ref, registry string, err error) {
	ref = strings.TrimPrefix(loc, OCIScheme)
	i := strings.LastIndex(ref, "/"+Repository+"/")
	if i <= 0 {
		return "", "", fmt.Errorf("catalog %q: want oci://REGISTRY/%s/<dataset>:<version>", loc, Repository)
	}
	return ref, ref[:i], nil
}

var pinPattern = regexp.MustCompile(`^[0-9a-f]{64}$`)

// openHTTPS fetches a pinned manifest and, when pinned too, its lock.
func (o *options) openHTTPS(ctx context.Context, loc string) (*task.Manifest, []byte, string, error) {
	u, pins, err := splitPins(loc)
	if err != nil {
		return nil, nil, "", err
	}
	if pins["sha256"] == "" {
		return nil, nil, "", fmt.Errorf("catalog %s is not pinned: add #sha256=<hex of the manifest> (`sha256sum manifest.json`), so that only that manifest is believed", u)
	}
	data, err := o.get(ctx, u, pins["sha256"])
	if err != nil {
		return nil, nil, "", err
	}
	m, err := task.ParseManifest(u, data)
	if err != nil {
		return nil, nil, "", err
	}
	lockURL := u
	if i := strings.LastIndex(u, "/"); i >= 0 {
		lockURL = u[:i+1] + task.LockFile
	}
	if pins["lock-sha256"] == "" {
		return m, nil, lockURL, nil
	}
	lock, err := o.get(ctx, lockURL, pins["lock-sha256"])
	if err != nil {
		return nil, nil, "", err
	}
	return m, lock, lockURL, nil
}

// readLock reads a lock named by path or pinned https URL.
func (o *options) readLock(ctx context.Context, loc string) ([]byte, error) {
	if !strings.HasPrefix(loc, HTTPSScheme) {
		return os.ReadFile(loc)
	}
	u, pins, err := splitPins(loc)
	if err != nil {
		return nil, err
	}
	if pins["sha256"] == "" {
		return nil, fmt.Errorf("%s is not pinned: add #sha256=<hex of the lock>", u)
	}
	return o.get(ctx, u, pins["sha256"])
}

// splitPins cuts "#sha256=…&lock-sha256=…" off an https URL.
func splitPins(loc string) (string, map[string]string, error) {
	u, frag, _ := strings.Cut(loc, "#")
	pins := map[string]string{}
	if frag != "" {
		q, err := url.ParseQuery(frag)
		if err != nil {
			return "", nil, fmt.Errorf("catalog %s: the pin %q is not key=value pairs", u, frag)
		}
		for k, v := range q {
			if k != "sha256" && k != "lock-sha256" {
				return "", nil, fmt.Errorf("catalog %s: unknown pin %q (want sha256 and lock-sha256)", u, k)
			}
			if len(v) != 1 || !pinPattern.MatchString(v[0]) {
				return "", nil, fmt.Errorf("catalog %s: %s must be 64 lower-case hex digits", u, k)
			}
			pins[k] = v[0]
		}
	}
	return u, pins, nil
}

// get fetches u and checks that its bytes have SHA-256 want.
func (o *options) get(ctx context.Context, u, want string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", u, err)
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("fetching %s: %s", u, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument+1))
	if err != nil {
		return nil, fmt.Errorf("fetching %s: %w", u, err)
	}
	if len(data) > maxDocument {
		return nil, fmt.Errorf("fetching %s: larger than %d MiB", u, maxDocument>>20)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != want {
		return nil, fmt.Errorf("%s has SHA-256 %s, but the pin says %s: refusing it (the file changed, or is not the one you meant)", u, got, want)
	}
	return data, nil
}
