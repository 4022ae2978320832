// Package assemble provides the images SSEBench adds on top of a case image:
// the tool image of sandbox mode (SPEC.md section 4), computed in Go from the
// case image's layers as new OCI layers, without Docker and without running
// anything inside the image.
//
// The tool image is the case image's layers, untouched, plus:
//
//	system  accounts files, removed homes, /home/model, /var/lib/ssebench,
//	        other-write removal and cache sharing outside SOURCE_DIR,
//	        /ssebench 0700
//	repo    /ssebench-repo: the original source tree, as it was, 0700
//	source  SOURCE_DIR owned 1000:1000 behind an opaque whiteout, without
//	        its old .git directories, with a fresh one-commit repository
//	runtime the runtime image's layers, as they are
//	seal    only when a runtime layer would change a mode the contract fixes
//
// The repo and source layers are separate because both are written in one
// pass over the case layers: each file's bytes go to both at once, and a
// tar stream cannot hold the same content twice without reading it twice.
package assemble
