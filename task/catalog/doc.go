// Package catalog provides the catalogs users take tasks from: a dataset's
// manifest.json (and, when it has one, its images.lock.json) found in a
// folder, at a path, at an https:// URL pinned by its checksum, or in a
// registry as an OCI artifact (REGISTRY/catalog/<dataset>:<version>, which
// `dataset publish` pushes and a mirror carries along with the images).
//
// A catalog names each task's case image; the lock pins it by digest when
// it matches the catalog (SPEC.md section 11), and a lock that is
// malformed or stale is reported, never silently ignored. List lists the
// tasks of catalogs as `ssebench tasks list` prints them.
package catalog
