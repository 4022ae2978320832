// Package registry provides everything about where images live: their names
// (REGISTRY, VERSION and the lowercasing rules of each layer), the local OCI
// image layout store, and reading from and writing to registries.
package registry
