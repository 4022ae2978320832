// Package preflight provides the image plan of runs, as `tasks check`,
// `eval --check` and a run's first check read it: for each task (of the
// home's datasets, a dataset folder, or task ids) and agent, the base,
// case, tool and agent images, and the runtime, where each is (the local
// store, else the registry, read with manifests and configs only), the
// platforms it has, and what must be made before a run: a run builds the
// case, tool and agent images, and never a base image or the runtime, so
// those get the command that makes them.
package preflight
