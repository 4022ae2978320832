// Package examples is the room of the working examples of ssebench's
// extension points. They are built and tested with the rest of the module
// but linked into no production binary:
//
//   - toollayer: a custom tool layer (`--tool-layer example`), and
//     cmd/ssebench-example, the ssebench CLI built with it;
//   - entrypointmode: an entrypoint mode (`--mode example`), and
//     cmd/ssebench-entrypoint-example, the entrypoint built with it
//     (`ssebench runtime build --entrypoint ./examples/cmd/ssebench-entrypoint-example`).
//   - models: scripts for `ssebench model-server` and the model files
//     that point a run at it (docs/models.md); no Go.
//
// The README's "Custom tool layers" and "Entrypoint modes" explain them.
package examples
