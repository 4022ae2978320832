// Package evaluate provides evaluations: every (task, agent, attempt) of a
// plan run with at most N containers at once, each image built once however
// many runs need it, into one evaluation folder that a killed evaluation
// resumes from. Prepare checks a new evaluation's Request (its tasks,
// settings and budget) and plans it; runs go through a small Backend
// (containerd, or a cluster's Jobs: NewBackend).
//
// An evaluation folder is
//
//	plan.json         the plan (written once, atomically)
//	runs/<run-id>/    finished runs, each complete: it is renamed there whole
//	.partial/         runs in progress; what a killed evaluation left is removed
package evaluate
