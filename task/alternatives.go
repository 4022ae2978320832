package task

// The patches a task folder may carry beside its reference fix, for
// `dataset verify` (an imported task does). Both are under sse/, which
// the case image copies to /ssebench, out of the agent's sight.
const (
	// StubsFile declares on the buggy tree, as compile stubs, what the
	// hidden tests call that the fix adds: with it applied, the hidden
	// tests compile there, and verify reads which fail before the fix.
	StubsFile = "sse/diffs/stubs.diff"
	// VariantFile is the reference fix as another author could have
	// written it (its private names renamed): it must pass as the
	// reference does.
	VariantFile = "sse/diffs/variant.diff"
	// VariantNote starts the line of the variant's preamble that names
	// what it renamed ("renamed: pkg.redact, ..."), which verify quotes
	// when the variant fails.
	VariantNote = "renamed: "
)
