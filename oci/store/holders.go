package store

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/42-b3yond-6ug/ssebench/internal/safefile"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

const (
	mountsDir = ".mounts"
	// maxHolders bounds the repositories remembered per blob.
	maxHolders = 8
)

// Holders is the store's memory of which repositories of one registry hold
// which blobs (from earlier pushes and pulls), and of uploads left
// unfinished. A push asks it for mount candidates and resumes uploads from
// it; a read of a blob that the store recorded without its bytes fetches
// it from one of its holders. It lives in .mounts/<registry>.json and is
// only ever a hint: a stale entry costs one refused mount, one restarted
// upload or one failed fetch that tries the next holder.
type Holders struct {
	registry string
	path     string
	mu       sync.Mutex
	data     holderData
}

type holderData struct {
	// Registry names the record's registry (file names lose its ':').
	Registry string `json:"registry,omitempty"`
	// Blobs maps a digest to repositories (without the registry), the
	// most recent first.
	Blobs map[string][]string `json:"blobs"`
	// Uploads maps "<repository>@<digest>" to an unfinished upload.
	Uploads map[string]upload `json:"uploads,omitempty"`
}

// upload is an unfinished upload: where it is and which process owns it.
type upload struct {
	Location string `json:"location"`
	PID      int    `json:"pid"`
}

// liveUploads are the uploads this process is sending right now, keyed
// by record path and key: another push of this process must not resume
// them either.
var liveUploads sync.Map

// resumable reports whether u may be taken over: its owner is gone (a
// killed push), and it is not being sent by this process.
func resumable(u upload, live bool) bool {
	if u.PID == os.Getpid() {
		return !live
	}
	if u.PID <= 0 {
		return true
	}
	// Signal 0 checks that the process exists; EPERM means it does.
	err := syscall.Kill(u.PID, 0)
	return errors.Is(err, syscall.ESRCH)
}

// Holders opens the record of registry (host or host:port).
func (s *Store) Holders(registry string) *Holders {
	r := &Holders{registry: registry, path: filepath.Join(s.dir, mountsDir, recordFile(registry))}
	r.data = r.read()
	return r
}

// recordFile is the record's file name: the registry with every character
// that is not safe in a file name replaced.
func recordFile(registry string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '_'
	}, registry) + ".json"
}

// sources lists full repository names (registry/repository) that are
// recorded as holding d, in every registry the store has a record of.
func (s *Store) sources(d v1.Hash) []string {
	ents, err := os.ReadDir(filepath.Join(s.dir, mountsDir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		var hd holderData
		b, err := os.ReadFile(filepath.Join(s.dir, mountsDir, e.Name()))
		if err != nil || json.Unmarshal(b, &hd) != nil {
			continue
		}
		reg := hd.Registry
		if reg == "" {
			continue // written before records named their registry
		}
		for _, repo := range hd.Blobs[d.String()] {
			out = append(out, reg+"/"+repo)
		}
	}
	return out
}

func (r *Holders) read() holderData {
	var d holderData
	if b, err := os.ReadFile(r.path); err == nil {
		_ = json.Unmarshal(b, &d) // a damaged record is an empty one
	}
	if d.Blobs == nil {
		d.Blobs = map[string][]string{}
	}
	if d.Uploads == nil {
		d.Uploads = map[string]upload{}
	}
	return d
}

// Repositories lists the repositories (without the registry) recorded as
// holding d, the most recent first.
func (r *Holders) Repositories(d v1.Hash) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.data.Blobs[d.String()]...)
}

// Upload returns the location of an unfinished upload of d to repo that
// this push may resume, or "": an upload that another live process (or
// another push of this one) is sending is never handed out, so that two
// pushes do not write one upload at two offsets.
func (r *Holders) Upload(repo name.Repository, d v1.Hash) string {
	k := repo.RepositoryStr() + "@" + d.String()
	r.mu.Lock()
	u, ok := r.read().Uploads[k]
	r.mu.Unlock()
	_, live := liveUploads.Load(r.path + "|" + k)
	if !ok || u.Location == "" || !resumable(u, live) {
		return ""
	}
	return u.Location
}

// Release says this process stopped sending its upload of d to repo
// without finishing it: a later push may resume it.
func (r *Holders) Release(repo name.Repository, d v1.Hash) {
	liveUploads.Delete(r.path + "|" + repo.RepositoryStr() + "@" + d.String())
}

// SetUpload records the latest location of an upload of d to repo, owned
// by this process; "" forgets it (the upload finished or was given up).
func (r *Holders) SetUpload(repo name.Repository, d v1.Hash, loc string) {
	k := repo.RepositoryStr() + "@" + d.String()
	if loc == "" {
		liveUploads.Delete(r.path + "|" + k)
	} else {
		liveUploads.Store(r.path+"|"+k, true)
	}
	r.update(func(data *holderData) {
		if loc == "" {
			delete(data.Uploads, k)
		} else {
			data.Uploads[k] = upload{Location: loc, PID: os.Getpid()}
		}
	})
}

// Add records that repo (without the registry) holds the blobs ds.
func (r *Holders) Add(repo string, ds ...v1.Hash) {
	r.update(func(data *holderData) {
		for _, d := range ds {
			k := d.String()
			hs := []string{repo}
			for _, h := range data.Blobs[k] {
				if h != repo && len(hs) < maxHolders {
					hs = append(hs, h)
				}
			}
			data.Blobs[k] = hs
		}
	})
}

// update applies f to the record on disk, under a file lock so that
// concurrent commands merge rather than overwrite each other. Failing to
// record is not an error: the record is only a hint.
func (r *Holders) update(f func(*holderData)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(r.path), 0o755); err != nil {
		return
	}
	unlock, err := lockFile(r.path + ".lock")
	if err != nil {
		return
	}
	defer unlock()
	d := r.read()
	f(&d)
	d.Registry = r.registry
	r.data = d
	b, err := json.Marshal(d)
	if err != nil {
		return
	}
	// Mode 0600, the mode the record has always had (CreateTemp's).
	_ = safefile.WriteBytes(r.path, b, 0o600)
}
