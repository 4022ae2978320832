// Package hostile provides the bookkeeping of the hostile-input suite: the
// TestHostile* tests across packages (crafted case images, runtime images,
// layers, task and agent folders, archives) record each case under its
// class, and scripts/test.sh prints a table of classes, cases and passes
// at the end of the run.
//
// A test calls Case(t, class) at the start of each case (a subtest); when
// SSEBENCH_HOSTILE_SUMMARY names a directory, the case's outcome is
// appended, once the case has finished, to a file of that directory named
// after the test process. Without the variable nothing is written.
package hostile
