// Package images is the room of the images BuildKit builds: the base
// images' Dockerfiles (base-images/generic-<lang>/), the builds of base and
// case images (casebuild: which images, their names, arguments and labels,
// build-case's up-to-date check) and the small BuildKit client they and the
// agent images that need RUN use (buildkit). It holds no code of its own.
// Everything above the case image is computed in Go instead: see assemble.
package images
