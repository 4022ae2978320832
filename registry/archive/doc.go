// Package archive provides image archives: Save writes images from the
// local store or their registries as one deterministic OCI image layout in
// a tar (with --since, leaving out what an earlier archive carried), Load
// reads one into the store, verifying every blob before it tags anything,
// and PushLoaded pushes the loaded images to a registry under a new
// REGISTRY prefix.
package archive
