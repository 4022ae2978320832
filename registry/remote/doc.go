// Package remote provides ssebench's access to image registries: resolving
// references through the local store or a registry (Resolver, with a pull
// policy), pushing images and indexes (Push, PushAll), copying image sets
// between registry prefixes (Mirror), fetching and tagging (Fetch, Tag),
// and the one registry policy every client of a registry shares (Access:
// credentials, plain-HTTP hosts, retries, stall deadlines).
//
// It drives go-containerregistry's remote package for reads, and speaks
// the distribution protocol itself for pushes, so that a push can mount
// blobs from other repositories, resume an interrupted upload and report
// each blob. Its files follow the jobs of a push: push.go decides what goes
// where and in which order; client.go, upload.go and manifest.go make the
// requests; retry.go and deadline.go say when a request is tried again and
// how long one may take; options.go holds the options of every entry point.
package remote
