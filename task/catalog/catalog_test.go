package catalog_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/random"
	ggremote "github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/42-b3yond-6ug/ssebench/internal/testing/testenv"
	"github.com/42-b3yond-6ug/ssebench/registry/remote"
	"github.com/42-b3yond-6ug/ssebench/task"
	"github.com/42-b3yond-6ug/ssebench/task/catalog"
)

const (
	id     = "kvconf-12-afb9ee1"
	reg    = "registry.invalid/ssebench"
	digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
)

// examples returns the example dataset's manifest and a lock that pins
// task id with the manifest's files digest.
func examples(t *testing.T) ([]byte, *task.Manifest, []byte) {
	t.Helper()
	mdata, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(), "datasets", "examples", task.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	m, err := task.ParseManifest("manifest.json", mdata)
	if err != nil {
		t.Fatal(err)
	}
	return mdata, m, lockFor(t, m, m.Dataset, m.Version, task.DigestFiles(m.Task(id).Files))
}

func lockFor(t *testing.T, m *task.Manifest, dataset, version, files string) []byte {
	t.Helper()
	l := &task.Lock{Dataset: dataset, Version: version, Images: map[string]task.LockedImage{
		id: {Digest: digest, FilesSHA256: files, Revision: "0123abc"},
	}}
	b, err := l.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func write(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for n, b := range files {
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpenFiles opens folder and manifest.json catalogs with good, stale
// and malformed locks, and checks which reference a run pulls and what the
// user is warned of.
func TestOpenFiles(t *testing.T) {
	mdata, m, lock := examples(t)
	byDigest := reg + "/case/examples/" + id + "@" + digest
	byTag := reg + "/case/examples/" + id + ":" + m.Version
	tests := []struct {
		name        string
		lock        []byte // nil: no lock file
		asFile      bool
		want        string
		warning     string // a catalog warning, "" for none
		taskWarning string
	}{
		{name: "folder with a lock", lock: lock, want: byDigest},
		{name: "manifest path with a lock", lock: lock, asFile: true, want: byDigest},
		{name: "no lock", want: byTag, warning: "has no images lock"},
		{name: "malformed lock", lock: []byte(`{"dataset": "examples", "version": `), want: byTag, warning: "ignoring a malformed images lock"},
		{name: "lock of another version", lock: lockFor(t, m, m.Dataset, "examples-v0", task.DigestFiles(m.Task(id).Files)), want: byTag, warning: "ignoring the stale images lock"},
		{name: "lock of other task files", lock: lockFor(t, m, m.Dataset, m.Version, strings.Repeat("2", 64)), want: byTag, taskWarning: "from other task files than the catalog lists (stale)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, map[string][]byte{task.ManifestFile: mdata})
			if tt.lock != nil {
				write(t, dir, map[string][]byte{task.LockFile: tt.lock})
			}
			loc := dir
			if tt.asFile {
				loc = filepath.Join(dir, task.ManifestFile)
			}
			c, err := catalog.Open(context.Background(), loc)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(c.Warnings, "\n"); (tt.warning == "") != (got == "") || !strings.Contains(got, tt.warning) {
				t.Errorf("warnings = %q, want %q", got, tt.warning)
			}
			ref, _, warning, err := c.CaseRef(reg, id)
			if err != nil {
				t.Fatal(err)
			}
			if ref != tt.want {
				t.Errorf("CaseRef = %s, want %s", ref, tt.want)
			}
			if (tt.taskWarning == "") != (warning == "") || !strings.Contains(warning, tt.taskWarning) {
				t.Errorf("CaseRef warning = %q, want %q", warning, tt.taskWarning)
			}
		})
	}
}

// TestOpenLockEnv replaces the catalog's lock with another (what
// SSEBENCH_IMAGES_LOCK does).
func TestOpenLockEnv(t *testing.T) {
	mdata, m, lock := examples(t)
	dir := t.TempDir()
	write(t, dir, map[string][]byte{task.ManifestFile: mdata, task.LockFile: []byte("{}"), "other.lock.json": lock})
	c, err := catalog.Open(context.Background(), dir, catalog.WithLock(filepath.Join(dir, "other.lock.json")))
	if err != nil {
		t.Fatal(err)
	}
	if ref, pinned, _, _ := c.CaseRef(reg, id); !pinned {
		t.Errorf("CaseRef = %s, want it pinned by the lock of WithLock (%v)", ref, c.Warnings)
	}
	_ = m
}

// TestOpenHTTPS takes a catalog from an https URL only with the pin its
// bytes match.
func TestOpenHTTPS(t *testing.T) {
	mdata, _, lock := examples(t)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/examples/manifest.json":
			w.Write(mdata)
		case "/examples/images.lock.json":
			w.Write(lock)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	u := srv.URL + "/examples/manifest.json"
	tests := []struct {
		name, loc, err string
		pinned         bool
	}{
		{name: "pinned", loc: u + "#sha256=" + sum(mdata)},
		{name: "pinned with its lock", loc: u + "#sha256=" + sum(mdata) + "&lock-sha256=" + sum(lock), pinned: true},
		{name: "not pinned", loc: u, err: "is not pinned: add #sha256="},
		{name: "other bytes", loc: u + "#sha256=" + strings.Repeat("0", 64), err: "but the pin says " + strings.Repeat("0", 64) + ": refusing it"},
		{name: "lock of other bytes", loc: u + "#sha256=" + sum(mdata) + "&lock-sha256=" + sum(mdata), err: "images.lock.json has SHA-256"},
		{name: "unknown pin", loc: u + "#md5=" + sum(mdata), err: `unknown pin "md5"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := catalog.Open(context.Background(), tt.loc, catalog.WithHTTPClient(srv.Client()))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Open(%s) = %v, want an error with %q", tt.loc, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, pinned, _, _ := c.CaseRef(reg, id); pinned != tt.pinned {
				t.Errorf("pinned = %v, want %v (warnings %q)", pinned, tt.pinned, c.Warnings)
			}
		})
	}
}

// TestOpenOCI reads the catalog artifact from a registry: its images are
// under the registry path before /catalog/.
func TestOpenOCI(t *testing.T) {
	mdata, _, lock := examples(t)
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	art, err := catalog.Artifact(mdata, lock)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := name.ParseReference(host+"/mirror/ssebench/catalog/examples:examples-v1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := ggremote.Write(ref, art); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(context.Background(), "oci://"+ref.String())
	if err != nil {
		t.Fatal(err)
	}
	got, pinned, _, err := c.CaseRef(reg, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := host + "/mirror/ssebench/case/examples/" + id + "@" + digest; got != want || !pinned {
		t.Errorf("CaseRef = %s (pinned %v), want %s", got, pinned, want)
	}

	// An image that is not a catalog is refused.
	img, _ := random.Image(100, 1)
	other, _ := name.ParseReference(host+"/x/catalog/examples:v1", name.Insecure)
	if err := ggremote.Write(other, img); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Open(context.Background(), "oci://"+other.String()); err == nil || !strings.Contains(err.Error(), "is not a catalog artifact") {
		t.Errorf("Open(an image) = %v, want a refusal", err)
	}
	if _, err := catalog.Open(context.Background(), "oci://"+host+"/no-catalog-path:v1"); err == nil || !strings.Contains(err.Error(), "want oci://REGISTRY/catalog/") {
		t.Errorf("Open(a path without /catalog/) = %v", err)
	}
}

// TestCatalogMirrors: the catalog artifact, named to `ssebench mirror`,
// arrives under the target prefix byte for byte and opens there (what
// `dataset publish --help` tells an operator to do).
func TestCatalogMirrors(t *testing.T) {
	mdata, _, lock := examples(t)
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	art, err := catalog.Artifact(mdata, lock)
	if err != nil {
		t.Fatal(err)
	}
	src, _ := name.ParseReference(host+"/pub/ssebench/catalog/examples:examples-v1", name.Insecure)
	if err := ggremote.Write(src, art); err != nil {
		t.Fatal(err)
	}
	rep, err := remote.Mirror(context.Background(), []string{src.String()}, host+"/pub/ssebench", host+"/mirror/ssebench", remote.WithInsecureRegistries(host))
	if err != nil {
		t.Fatalf("Mirror(catalog) = %v", err)
	}
	want, _ := art.Digest()
	if len(rep.Images) != 1 || rep.Images[0].Digest != want {
		t.Errorf("mirrored %+v, want the artifact %s", rep.Images, want)
	}
	if _, err := catalog.Open(context.Background(), "oci://"+host+"/mirror/ssebench/catalog/examples:examples-v1"); err != nil {
		t.Errorf("the mirrored catalog does not open: %v", err)
	}
}
