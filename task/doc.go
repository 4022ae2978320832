// Package task provides the task and dataset model of ssebench: a task
// folder's sse/config.yaml and Dockerfile (SPEC.md section 3), the files
// digest that case images carry as a label, a dataset's dataset.yaml,
// manifest.json and images.lock.json (section 11), and the choice of
// architecture and platform for a run (section 9).
//
// Nothing here talks to a daemon or a registry: the package reads folders
// and files, checks them, and computes names, digests and references that
// the build and run code uses.
//
// Validation collects every problem it finds instead of stopping at the
// first one. Each [Problem] is one line, naming the file (as the caller
// spelled the folder) and, where known, the line: a user can fix a task in
// one pass.
//
// Package catalog under this one provides the catalogs users take tasks
// from; what a maintainer does before handing a dataset over (verify, which
// runs an evaluation, lock, publish) sits above the runs, in release.
package task
