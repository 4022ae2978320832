// Package predictions provides the grading of SWE-bench-style predictions:
// Read takes a predictions file (JSON Lines or one JSON array of
// instance_id, model_name_or_path and model_patch) apart, one patch file
// per prediction, and NewBackend returns an evaluate.Backend that grades
// each patch as agents/prediction's change, in the agent phase of a run of
// its own, the model's name where the agent's name goes. Prepare checks a
// grade's Request against the home and writes its plan.
package predictions
