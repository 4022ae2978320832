// Package gitrepo provides a Builder that writes a fresh git repository
// with one commit of a source tree directly as tar entries, without running
// git and without the tree on disk: step 8 of the tool image (SPEC.md
// section 4).
//
// The commit holds what `git add -A` of git 2.39 would add: .gitignore files
// at every depth apply with git's own matching rules (see Builder.Ignored),
// .gitattributes files decide which files are stored with LF line endings
// (text, text=auto with git's binary heuristics, eol, crlf, macros; see
// Builder.AddAttributesFile), ".git" entries are left out, and file modes are 100644, 100755 (the
// owner's executable bit, as git reads it) or 120000 (symlinks). The tree
// id therefore equals what `git init && git add -A && git write-tree` gives
// on the same checkout; the tests check that against git itself.
//
// The repository is the minimum git needs, plus reflogs: HEAD, config,
// index, refs/heads/<branch>, logs, and one pack with its idx holding every
// object. Blob content is streamed once, compressed to a spool file, and
// copied into the pack at Finish, so memory does not grow with file sizes;
// what is known of each file and blob (path, mode, id, where its stream is)
// waits in record files until Finish too, so that it does not add to what
// the caller holds while it adds the files.
// The same files and options give the same bytes (for one Go version: zlib
// output is Go's).
//
// Known differences from real git: of the .gitattributes conversions,
// ident and working-tree-encoding are not applied (filters are not
// configured in a fresh repository, so git does not run them either); a
// subdirectory whose .git file points to a repository that exists would be
// a gitlink for git, and is an ordinary directory here (in the tool image
// every .git directory is gone, so such links point nowhere, and git too
// treats those as ordinary directories); the system gitconfig of the case
// image (init.defaultBranch, core.excludesFile) is not read: pass
// WithBranch if it matters; a file the model user cannot read makes `git
// add -A` fail, and is added here.
package gitrepo
