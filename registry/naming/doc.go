// Package naming holds what an image is called: REGISTRY (flag, process
// environment, .env file), VERSION, and the name of each layer of a run
// (SPEC.md section 1). It does no I/O beyond reading .env files.
package naming
