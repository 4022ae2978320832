// Package buildkit provides a small client for building images from
// Dockerfiles with a BuildKit daemon (buildkitd).
//
// It is used for the images that need RUN: the base images, the case images
// and agent images whose Dockerfile cannot be assembled natively. A build
// either writes its image to a fresh OCI image layout directory, which the
// caller copies into its own store, or pushes it to a registry. BuildKit's
// progress display is written to a writer (stderr by default), so a failed
// build's error is a single line that names the Dockerfile; the build log is
// already on screen above it.
package buildkit
