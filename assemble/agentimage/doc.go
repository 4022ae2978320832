// Package agentimage provides the agent image (SPEC.md section 6): the tool
// image plus what an agent's Dockerfile adds.
//
// An agent folder holds a Dockerfile that starts FROM ssebench-agent (the
// tool image, as a named build context), may copy files from its own folder
// (the build context) or from the SSEBench home (the named context
// "workspace"), and sets the agent command with CMD.
//
// NewPlan parses the Dockerfile with BuildKit's own parser and decides how
// to build it. When every instruction needs nothing executed (ARG, ENV,
// LABEL, WORKDIR, USER, CMD, ENTRYPOINT, EXPOSE, SHELL, STOPSIGNAL, and
// COPY or ADD of local files), Assemble computes the image in Go, in
// milliseconds and without a daemon: a config change for each metadata
// instruction and one layer for each COPY, ADD and WORKDIR, with the file
// modes, owners and times BuildKit gives them and the history entries it
// writes. Otherwise (RUN, for one) BuildKit builds the whole Dockerfile, with
// the tool image as the named context ssebench-agent.
//
// Where the native path and BuildKit differ on purpose:
//
//   - Times: new directories (created parents of a COPY destination,
//     WORKDIR) and directories a COPY adds entries to get the build time
//     (WithTime) rather than the wall clock, and copied files keep their
//     source times only when older than the build time, so that the same
//     inputs give the same layer on any checkout. BuildKit gives the same
//     times when given SOURCE_DATE_EPOCH and rewrite-timestamp, which the
//     BuildKit function passes for BuildRequest.Time; the oracle test
//     compares every time.
//   - History entries carry BuildKit's created_by text, but their comment
//     names this package, not BuildKit.
//   - A COPY source that climbs out of its context ("../x", or a symlink
//     whose target does) is an error; BuildKit would silently clamp it to
//     the context's root.
//   - --chown with names reads /etc/passwd and /etc/group of the tool image
//     (or of a file an earlier COPY of the same Dockerfile wrote there), as
//     BuildKit does; unknown names mean root (0), as with BuildKit.
//   - Extended attributes of the context's files are not copied.
package agentimage
