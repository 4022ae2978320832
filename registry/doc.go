// Package registry is the room of everything that faces an image registry
// or moves images between machines. It holds no code of its own; each job
// is a package under it:
//
//   - naming: what an image is called (REGISTRY, VERSION, the name of each
//     layer of a run, SPEC.md section 1);
//   - remote: resolving a name (the local store first, then the registry),
//     pushing (HEAD first, cross-repository mounts, resumable chunks,
//     retries) and mirroring between registries;
//   - archive: save and load, one OCI image layout tar, for air-gapped
//     machines;
//   - trust: whether what a registry says (a reused tool image, a layer's
//     facts) may be believed.
//
// The local OCI image layout store is not here: it is an OCI format, and
// lives beside the layer writer in oci/store.
package registry
