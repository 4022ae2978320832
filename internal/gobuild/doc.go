// Package gobuild provides the one way ssebench compiles Go programs that
// go into images: static, for a given platform, with the same bytes on any
// machine. The runtime's programs (runtimebin) and an agent folder's
// go_build programs (agent) are both built with it.
package gobuild
