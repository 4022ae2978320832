// Package release provides what a dataset maintainer does before handing a
// dataset to users: verifying every task with the reference agent (its own
// fix must pass every check) and the dummy agent (the buggy tree must
// build, pass its function tests and still trigger every proof of
// concept), recording which case images verified, writing the dataset's
// images.lock.json from that record, and publishing: the verified case
// images pushed under immutable and moving tags, the lock merged, and the
// catalog pushed as an artifact next to the images.
package release
