package contract

// EnvTestReport names, in the environment of the task's test script, the
// file the script writes its structured test report to (tests.format of the
// task config). The file is in the daemon's scratch area, outside the tree;
// the daemon reads it once the script ended and judges the listed tests by
// name (docs/tasks.md, "Hidden tests judged by name").
const EnvTestReport = "SSE_TEST_REPORT"

// The formats a task's tests.format may name.
const (
	// TestFormatGoJSON is the output of `go test -json`.
	TestFormatGoJSON = "go-test-json"
	// TestFormatJUnit is a JUnit XML report (<testsuite>/<testcase>), what
	// most C, C++ and Java harnesses and cargo-nextest write.
	TestFormatJUnit = "junit-xml"
	// TestFormatLibtest is the plain output of Rust's libtest on stable
	// (`cargo test`): one `test NAME ... ok|FAILED|ignored` line a test.
	TestFormatLibtest = "libtest"
)

// TestFormats are the values tests.format may take.
var TestFormats = []string{TestFormatGoJSON, TestFormatJUnit, TestFormatLibtest}
